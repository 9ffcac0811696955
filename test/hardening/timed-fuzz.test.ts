import { setTimeout as sleep } from "node:timers/promises";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_CHECK_LIMITS } from "../../lib/competitors/check.js";
import { DEFAULT_BODY_LIMIT } from "../../lib/http/app.js";
import { MAX_ARTIFACT_BYTES } from "../../lib/intel/artifacts/contract.js";
import type { Site } from "../support/sites.js";
import {
  attackFile,
  attackPaths,
  attackText,
  crawlPatterns,
  queryFlood,
  STEMS,
  startHostileSite,
  TEXT_ATTACKS,
  vocabulary,
} from "./attacks.js";
import { intelModules } from "./fixtures.js";
import {
  type ContentSource,
  encodeComponent,
  fuzzSeed,
  type HostileBody,
  hostileBody,
  hostileContent,
  type Json,
  requestOf,
  toJsonText,
} from "./hostile.js";
import {
  type Answer,
  describeRequest,
  expectWellFormed,
  type RawRequest,
  send,
  shapeOf,
} from "./probe.js";
import { type HardenedProcess, startHardenedProcess } from "./runtime.js";
import { type ApiRoute, surface } from "./surface.js";

/**
 * A time-bounded fuzz of algorithmic attacks (./attacks.ts) against the local runtime, which runs
 * in a process of its own so that this suite keeps its clock while the service is stalled. Bodies
 * are generated from each route's schema and kept only when its zod schema accepts them, so most
 * requests are valid and reach their handlers with the attacks in their fields of free text; URL
 * sources, crawls and competitors point at a hostile site on 127.0.0.1 (the private-URL switch is
 * on); files are uploaded as multipart; a few bodies are hostile in shape too. The attacks earlier
 * runs found are sent every run too.
 *
 * Whatever is sent: every request answers within 2 s (a competitor check, which reads a live
 * site, within its documented budget more) and below 500; another client, polling throughout, is
 * answered within 500 ms; every source and crawl created ends `indexed` or `failed` with its error
 * within the deadlines of such work. A request that is slow is sent again once the service is
 * quiet, and only one slow twice fails: CPU contention on a shared machine, or work an earlier
 * request left behind, is not its doing. The fake model runs in this process: model time is not
 * the service's. Each run explores a fresh seed, printed; `FUZZ_SEED=<seed>` replays a run, and
 * FUZZ_STATS=1 prints every request as it is answered.
 */

const SEED = fuzzSeed("timed fuzz");
const ctx = `FUZZ_SEED=${SEED}`;
/** Longest answer to any request within the documented limits. */
const ANSWER_MS = 2000;
/**
 * Routes that read live pages before they answer: their documented budget for it comes on top
 * (crawl time is not what is timed; a check that keeps the CPU busy meanwhile still blocks the
 * other client).
 */
const READING_MS: Record<string, number> = {
  "POST /api/intel/competitors/{id}/check": API_CHECK_LIMITS.budgetMs,
};
/** The documented body limits: JSON bodies, and the routes that take less. */
const bodyLimitOf = (route: ApiRoute) =>
  route.label === "POST /api/artifacts" ? MAX_ARTIFACT_BYTES : DEFAULT_BODY_LIMIT;
/** Longest wait of the other client. */
const BYSTANDER_MS = 500;
/**
 * Time for a source or a crawl to end `indexed`, `completed` or `failed`: the longest deadline of
 * work on untrusted content (a file's 30 s in the sandbox), and time to queue and fetch it.
 */
const SETTLE_MS = 40_000;
/** How long each request's work is watched before the next request; the rest is checked at the end. */
const WATCH_MS = 10_000;
/** How long the service may stay silent or busy before it is taken as stalled: nothing more is sent. */
const GIVE_UP_MS = 10_000;
/**
 * Time for exploring: random cases past it are left out (and listed), so a run that meets many
 * slow but bounded inputs still ends; what was found before and the deletions are always sent.
 */
const EXPLORE_MS = 45_000;
/** Valid requests per route: the attacks' ways in, and routes that work on what they left, get more. */
const runsOf = (route: ApiRoute) =>
  route.multipart ? 5 : route.body || route.method === "POST" ? 2 : 1;

let service: HardenedProcess;
let sites: Site[] = [];
/** A hostile site of its own for what was found before: a competitor on it is always new. */
let foundSite: Site;
let bystander: Bystander;
/** Ids by prefix: the fixtures, then whatever the run creates. Path parameters pick from them. */
const known: Record<string, string[]> = {};
/** The request that created each id the run created, for reports about what it points at. */
const origins = new Map<string, string>();
/** The sources and crawls the run created, as the paths that read them. */
const created: string[] = [];
const outcomes: Outcome[] = [];
/** Requests slow once but in time when sent again: contention, or an earlier request's work. */
const slowOnce: string[] = [];
let stalledAfter: string | undefined;
const notSent: string[] = [];
const leftOut: string[] = [];

interface Outcome {
  route: ApiRoute;
  /** Whether the request was valid-shaped (as opposed to hostile in shape too). */
  valid: boolean;
  label: string;
  status: number | undefined;
  /** The error body's code and message, for an answer of 400 or above. */
  error?: string;
  ms: number;
  /** What is wrong with the answer itself (a 5xx, a malformed error, a silent failure). */
  problems: string[];
  /** An answer past its time. */
  late: string[];
  /** The other client's slow or missing answers meanwhile. */
  blocked: string[];
}

interface Poll {
  /** When it was sent. */
  at: number;
  ms: number;
  answered: boolean;
}

const inTime = (poll: Poll) => poll.answered && poll.ms <= BYSTANDER_MS;

interface Bystander {
  /** Polls sent since `since` that were slow or got no answer. */
  slowSince(since: number): Poll[];
  /** Waits for two polls sent from now on to answer in time; false after GIVE_UP_MS without. */
  quiet(): Promise<boolean>;
  stop(): Promise<void>;
}

/** Another client, polling a cheap list for the whole run. */
function startBystander(url: string, key: string): Bystander {
  let running = true;
  const polls: Poll[] = [];
  const loop = (async () => {
    while (running) {
      const at = performance.now();
      const answered = await send(url, {
        method: "GET",
        path: "/api/knowledge?limit=1",
        key,
        signal: AbortSignal.timeout(ANSWER_MS),
      }).then(
        (answer) => answer.status === 200,
        () => false,
      );
      polls.push({ at, ms: Math.round(performance.now() - at), answered });
      await sleep(50);
    }
  })();
  return {
    slowSince: (since) => polls.filter((poll) => poll.at >= since && !inTime(poll)),
    async quiet() {
      const since = performance.now();
      while (performance.now() - since < GIVE_UP_MS) {
        const recent = polls.filter((poll) => poll.at >= since).slice(-2);
        if (recent.length === 2 && recent.every(inTime)) return true;
        await sleep(50);
      }
      return false;
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** A request with the time limit; undefined when it got no answer in time. */
async function timed(request: RawRequest): Promise<Answer | undefined> {
  return send(service.url, { ...request, signal: AbortSignal.timeout(ANSWER_MS) }).catch(
    () => undefined,
  );
}

const asJson = (answer: Answer | undefined): Record<string, unknown> | undefined => {
  try {
    return answer ? (JSON.parse(answer.text) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
};

/** An error answer's code and message, as the project's error body gives them. */
const errorOf = (answer: Answer): string => {
  const error = asJson(answer)?.error as { code?: unknown; message?: unknown } | undefined;
  return `${error?.code ?? ""}: ${String(error?.message ?? "").slice(0, 300)}`;
};

/**
 * Waits for a source or crawl to end `indexed`, `completed` or `failed`, and says how it ended
 * (`indexing` when it did not, or when the service stopped answering).
 */
async function settle(
  path: string,
  within = SETTLE_MS,
): Promise<"settled" | "failed without an error" | "indexing"> {
  const deadline = performance.now() + within;
  let answered = performance.now();
  while (performance.now() < deadline && performance.now() - answered < GIVE_UP_MS) {
    const answer = await timed({ method: "GET", path, key: service.key });
    if (answer) answered = performance.now();
    const body = asJson(answer);
    if (answer?.status === 404) return "settled";
    if (body && body.status !== "indexing") {
      return body.status === "failed" && !(body.last_error ?? body.lastError)
        ? "failed without an error"
        : "settled";
    }
    await sleep(100);
  }
  return "indexing";
}

/** Remembers the ids an answer names (`id`, `crawlId`); the path to settle, for new work. */
function track(answer: Answer, request: RawRequest): string | undefined {
  const body = asJson(answer);
  if (answer.status >= 300 || !body) return undefined;
  for (const value of [body.id, body.crawlId]) {
    const prefix = typeof value === "string" ? /^[a-z]+_/.exec(value)?.[0] : undefined;
    if (prefix && typeof value === "string" && !known[prefix]?.includes(value)) {
      known[prefix] = [...(known[prefix] ?? []), value];
      origins.set(value, describeRequest(request, 160));
    }
  }
  if (body.status !== "indexing") return undefined;
  if (typeof body.crawlId === "string") return `/api/knowledge/crawl/${body.crawlId}`;
  return typeof body.id === "string" ? `/api/knowledge/${body.id}` : undefined;
}

/** What is wrong with an answer: a 5xx, a malformed error, a leak. */
function answerProblems(answer: Answer): string[] {
  // The fake model answers the smallest instance of a schema, which some modules refuse as
  // llm_error: that 502 is about the model, not the service.
  if (answer.status === 502 && answer.text.includes('"llm_error"')) return [];
  try {
    expectWellFormed("the answer", answer);
    return [];
  } catch (err) {
    return [(err as Error).message.split("\n")[0] ?? ""];
  }
}

/**
 * A path parameter: a value the parameter accepts, or a known id picked by index at run time
 * (negative from the newest: -1 is the id made last).
 */
type ParamChoice = { value: string } | { pick: number };

interface Case {
  route: ApiRoute;
  valid: boolean;
  /** Drawn at random (as opposed to found before, or a deletion). */
  explored: boolean;
  params: Record<string, ParamChoice>;
  query: string;
  body: HostileBody;
}

/** Sends a case, waits for its work to settle and the service to be quiet again; what happened. */
async function attempt(c: Case): Promise<Outcome> {
  const ids = Object.fromEntries(
    c.route.params.map((p) => {
      const choice = c.params[p.name] ?? { value: "x" };
      const pool = known[p.idPrefix ?? ""] ?? [];
      const value = "value" in choice ? choice.value : (pool.at(choice.pick % pool.length) ?? "x");
      return [p.name, { value, raw: false }];
    }),
  );
  const request = await requestOf(c.route, c.route.method, ids, c.query, c.body, service.key);
  const made = Object.values(ids).flatMap(({ value }) => {
    const origin = origins.get(value);
    return origin ? [` [${value} made by ${origin}]`] : [];
  });
  const label = `${describeRequest(request)}${made.join("")}`;
  const limit = ANSWER_MS + (READING_MS[c.route.label] ?? 0);
  const started = performance.now();
  let failure = "";
  const answer = await send(service.url, { ...request, signal: AbortSignal.timeout(limit) }).catch(
    (err: NodeJS.ErrnoException) => {
      failure = err.name === "TimeoutError" ? "" : ` (${err.code ?? err.name}: ${err.message})`;
      return undefined;
    },
  );
  const ms = Math.round(performance.now() - started);
  const problems = answer ? answerProblems(answer) : [];
  const late = answer ? [] : [`no answer within ${limit} ms${failure}`];
  if (answer && ms > limit) late.push(`answered after ${ms} ms`);
  const work = answer ? track(answer, request) : undefined;
  if (work) {
    created.push(work);
    // Watched for a while, so what it does to the other client is put down to it; work that
    // takes longer is checked at the end.
    if ((await settle(work, WATCH_MS)) === "failed without an error") {
      problems.push(`${work} failed without an error`);
    }
  }
  if (service.ended() || !(await bystander.quiet())) stalledAfter ??= label;
  const waits = bystander.slowSince(started);
  const blocked =
    waits.length > 0
      ? [
          `the other client waited up to ${Math.max(...waits.map((w) => w.ms))} ms` +
            ` (${waits.filter((w) => !w.answered).length} of ${waits.length} slow polls unanswered)`,
        ]
      : [];
  return {
    route: c.route,
    valid: c.valid,
    label,
    status: answer?.status,
    ...(answer && answer.status >= 400 ? { error: errorOf(answer) } : {}),
    ms,
    problems,
    late,
    blocked,
  };
}

const isSlow = (o: Outcome) => o.late.length + o.blocked.length > 0;

/**
 * A case, sent again when it was slow: only a request slow twice, each time from a quiet service,
 * is slow by its own doing (and not by CPU contention, or by work an earlier request left).
 */
async function run(c: Case): Promise<Outcome> {
  const first = await attempt(c);
  if (!isSlow(first) || stalledAfter) return first;
  const again = await attempt(c);
  if (isSlow(again)) {
    const twice = (first: string[], again: string[]) => [
      ...first,
      ...again.map((what) => `again: ${what}`),
    ];
    return {
      ...first,
      late: twice(first.late, again.late),
      blocked: twice(first.blocked, again.blocked),
    };
  }
  slowOnce.push(`${first.label}: ${[...first.late, ...first.blocked].join("; ")}`);
  // The answer judged is the one in time; what was wrong with the first still counts.
  return { ...again, problems: [...first.problems, ...again.problems] };
}

/** Where the attacks go: free text everywhere, hostile pages behind every URL. */
function contentSource(): ContentSource {
  const on = (paths: string[]) =>
    fc
      .tuple(fc.constantFrom(...sites), fc.constantFrom(...paths))
      .map(([site, path]) => `${site.origin}${path}`);
  return {
    strings: attackText,
    fields: {
      url: on([...attackPaths.pages, ...attackPaths.texts]),
      seedUrl: on(attackPaths.pages),
      domain: on(attackPaths.pages),
      includePaths: crawlPatterns,
      excludePaths: crawlPatterns,
      query: queryFlood,
      message: queryFlood,
      competitorId: fc.constantFrom(...(known.comp_ ?? [])),
      // A presigned upload of any size up to a multipart body's, named by an attack: the
      // extension decides the type.
      bytes: fc.integer({ min: 1, max: 4 * 1024 * 1024 }),
      contentType: fc.constant("application/octet-stream"),
      filename: fc
        .tuple(attackText, fc.constantFrom(".md", ".txt", ".html", ".csv", ".pdf"))
        .map(([text, extension]) => `${text.slice(0, 200).replace(/[./\\]/g, "-")}${extension}`),
    },
  };
}

/** A valid query of the route's own parameters (no cursor: only a real page gives one). */
function validQuery(route: ApiRoute, source: ContentSource): fc.Arbitrary<string> {
  const params = route.query.filter((p) => p.name !== "cursor");
  if (params.length === 0) return fc.constant("");
  const schema = {
    type: "object",
    properties: Object.fromEntries(params.map((p) => [p.name, p.schema])),
  };
  return hostileContent(schema, source).map((json) => {
    const entries =
      json !== null && typeof json === "object" && !Array.isArray(json) && "entries" in json
        ? json.entries
        : [];
    const text = (value: Json) => (typeof value === "string" ? value : toJsonText(value));
    // A list filter (an array) is the parameter repeated, once per value.
    const pairs = entries.flatMap(([name, value]) =>
      (Array.isArray(value) ? value : [value]).map((v) => `${name}=${encodeComponent(text(v))}`),
    );
    return pairs.length > 0 ? `?${pairs.join("&")}` : "";
  });
}

/** A file with an attack in it, as `POST /api/knowledge` takes one. */
const uploadForm = (source: ContentSource): fc.Arbitrary<HostileBody> =>
  fc
    .tuple(
      attackFile,
      fc.option(
        source.strings.map((s) => s.slice(0, 200)).filter((s) => s.trim() !== ""),
        { nil: undefined },
      ),
    )
    .map(([file, name]) => ({
      kind: "multipart",
      contentType: undefined,
      form: {
        field: "file",
        bytes: file.bytes,
        filename: file.filename,
        type: file.type,
        extra: name === undefined ? [] : [["name", name]],
      },
    }));

/** A valid body: JSON the route's zod schema accepts, a file, or none for a route without one. */
function validBody(route: ApiRoute, source: ContentSource, branch: number | undefined) {
  const options: Array<fc.Arbitrary<HostileBody>> = [];
  if (route.body) {
    options.push(
      hostileContent(route.body, source, branch)
        .map(toJsonText)
        .filter(
          (text) =>
            Buffer.byteLength(text) <= bodyLimitOf(route) && route.accepts(JSON.parse(text)),
        )
        .map((text): HostileBody => ({ kind: "valid", text, contentType: "application/json" })),
    );
  }
  if (route.multipart) options.push(uploadForm(source));
  return options.length > 0
    ? fc.oneof(...options)
    : fc.constant<HostileBody>({ kind: "none", contentType: undefined });
}

/** A valid request to a route, or (`valid` false) one with a body hostile in shape: refused in time. */
function caseOf(route: ApiRoute, source: ContentSource, valid: boolean): fc.Arbitrary<Case> {
  const intel = intelModules();
  const modules = intel?.route === route ? intel.modules : [];
  const params = fc.record(
    Object.fromEntries(
      route.params.map((p): [string, fc.Arbitrary<ParamChoice>] => [
        p.name,
        p.schema.enum
          ? fc.constantFrom(...p.schema.enum.map((value) => ({ value: String(value) })))
          : fc.nat().map((pick) => ({ pick })),
      ]),
    ),
  );
  return params.chain((chosen) => {
    const module = chosen.module;
    // The intel route takes the input of the module its path names: that branch of its body.
    const branch =
      module && "value" in module && modules.includes(module.value)
        ? modules.indexOf(module.value)
        : undefined;
    const body = valid ? validBody(route, source, branch) : hostileBody(route);
    return fc.tuple(validQuery(route, source), body).map(([query, body]) => ({
      route,
      valid,
      explored: route.method !== "DELETE",
      params: chosen,
      query,
      body,
    }));
  });
}

const json = (value: unknown): HostileBody => ({
  kind: "valid",
  text: JSON.stringify(value),
  contentType: "application/json",
});

function fixed(label: string, body: HostileBody, params: Record<string, ParamChoice> = {}): Case {
  const route = surface.find((r) => r.label === label);
  if (!route) throw new Error(`No route ${label} in the manifest`);
  return { route, valid: true, explored: false, params, query: "", body };
}

/** Attacks earlier runs found, sent in every run after the explored ones: each stalled the service. */
function found(): Case[] {
  const page = (name: string, size: number) => `${foundSite.origin}/page/${name}/${size}/`;
  return [
    // One paragraph of 10,000 sentences: sentence splitting grew with its square.
    fixed("POST /api/knowledge", json({ text: TEXT_ATTACKS.sentences.build(10_000) })),
    // Four words, each the start of a quarter of the vocabulary's 70,000 words.
    fixed("POST /api/knowledge/search", json({ query: STEMS.join(" ") })),
    // A competitor whose homepage has 30,000 links, checked through the API.
    fixed("POST /api/intel/competitors", json({ domain: page("many-links", 30_000) })),
    fixed(
      "POST /api/intel/competitors/{id}/check",
      { kind: "none", contentType: undefined },
      {
        id: { pick: -1 },
      },
    ),
  ];
}

/** The run: every route in a seeded order, then what was found before, deletions last. */
function schedule(): Case[] {
  const source = contentSource();
  const cases = surface.flatMap((route, i) => [
    ...fc.sample(caseOf(route, source, true), { seed: SEED + i, numRuns: runsOf(route) }),
    ...(route.body ? fc.sample(caseOf(route, source, false), { seed: SEED + i, numRuns: 1 }) : []),
  ]);
  const [order = cases] = fc.sample(
    fc.shuffledSubarray(cases, { minLength: cases.length, maxLength: cases.length }),
    { seed: SEED, numRuns: 1 },
  );
  return [...order.filter((c) => c.explored), ...found(), ...order.filter((c) => !c.explored)];
}

interface Source {
  id: string;
  type: string;
  name: string;
  source_url_or_path: string | null;
  status: string;
  last_error: string | null;
}

async function allSources(): Promise<Source[]> {
  const sources: Source[] = [];
  let cursor: unknown = null;
  do {
    const query = cursor ? `&cursor=${encodeURIComponent(String(cursor))}` : "";
    const answer = await timed({
      method: "GET",
      path: `/api/knowledge?limit=100${query}`,
      key: service.key,
    });
    const page = asJson(answer);
    if (!page) throw new Error(`the source list did not answer within ${ANSWER_MS} ms (${ctx})`);
    sources.push(...(page.sources as Source[]));
    cursor = page.nextCursor;
  } while (cursor);
  return sources;
}

beforeAll(async () => {
  [foundSite, sites] = await Promise.all([
    startHostileSite(),
    Promise.all([startHostileSite(), startHostileSite(), startHostileSite()]),
  ]);
  service = await startHardenedProcess({
    allowPrivate: true,
    // Small vectors: the fake model's work stays small.
    env: { EMBEDDING_DIMENSIONS: "64" },
  });
  for (const [prefix, ids] of Object.entries(service.ids)) known[prefix] = [...ids];
  // A knowledge base that gives search work: a megabyte of distinct words under four stems,
  // indexed, and a first search that builds the index (a cold start is not what is timed).
  const text = JSON.stringify({ text: vocabulary(990_000), name: "Vocabulary" });
  const headers = { "content-type": "application/json" };
  const added = await send(service.url, {
    method: "POST",
    path: "/api/knowledge",
    key: service.key,
    headers,
    body: text,
  });
  expect(added.status, added.text).toBe(200);
  expect(await settle(`/api/knowledge/${String(asJson(added)?.id)}`)).toBe("settled");
  const warm = await send(service.url, {
    method: "POST",
    path: "/api/knowledge/search",
    key: service.key,
    headers,
    body: JSON.stringify({ query: STEMS.join(" ") }),
  });
  expect(warm.status, warm.text).toBe(200);
  bystander = startBystander(service.url, service.otherKey);
  expect(await bystander.quiet(), "the service is quiet before the run").toBe(true);
}, 90_000);

afterAll(async () => {
  await bystander?.stop();
  await service?.close();
  await Promise.all([foundSite, ...sites].map((site) => site?.close()));
});

/**
 * The run: every case of the schedule sent, its outcome kept. Each test below judges one side of
 * what the run did, so the run is a hook of their own (`-t` with any one of them runs it too).
 */
async function fuzz(): Promise<void> {
  const started = performance.now();
  for (const c of schedule()) {
    if (stalledAfter) {
      notSent.push(c.route.label);
      continue;
    }
    if (c.explored && performance.now() - started > EXPLORE_MS) {
      leftOut.push(c.route.label);
      continue;
    }
    const outcome = await run(c);
    if (process.env.FUZZ_STATS) console.info(outcome.status, `${outcome.ms} ms`, outcome.label);
    outcomes.push(outcome);
  }
  if (slowOnce.length > 0) console.info(`${ctx}: slow once, in time again:`, slowOnce);
  if (leftOut.length > 0) console.info(`${ctx}: left out after ${EXPLORE_MS / 1000} s:`, leftOut);
}

describe("a time-bounded fuzz of algorithmic attacks", () => {
  beforeAll(async () => {
    await fuzz();
    expect(outcomes.length, `${ctx}: the run sent nothing`).toBeGreaterThan(0);
  }, 300_000);

  it("answers every request within 2 s and below 500", () => {
    const failures = outcomes
      .filter((o) => o.problems.length + o.late.length > 0)
      .map((o) => {
        const what = [...o.problems, ...o.late];
        return `${o.label} -> ${o.status ?? "no answer"} in ${o.ms} ms: ${what.join("; ")}`;
      });
    if (stalledAfter) {
      const ended = service.ended();
      failures.push(
        ended
          ? `the runtime process ended (${ended}) after ${stalledAfter}`
          : `the service stayed busy or silent for ${GIVE_UP_MS / 1000} s after ${stalledAfter}`,
      );
    }
    if (notSent.length > 0) failures.push(`not sent: ${notSent.join(", ")}`);
    expect(failures, ctx).toEqual([]);
  });

  it("keeps answering another client within 500 ms the whole time", () => {
    const report = outcomes
      .filter((o) => o.blocked.length > 0)
      .map((o) => `during ${o.label}: ${o.blocked.join("; ")}`);
    expect(report, ctx).toEqual([]);
  });

  it("reaches every handler: valid requests are accepted", () => {
    const valid = outcomes.filter((o) => o.valid);
    const accepted = (o: Outcome) => o.status !== undefined && o.status < 300;
    // A handler was reached too when the model refused, the state said no (a duplicate), the
    // file a valid body describes is not of a type it takes (`report.md` as `application/pdf`
    // is a 415 from the upload's own check), or an intel module needs an input the body left
    // out and the workspace cannot supply (the documented 400 that names it).
    const reached = (o: Outcome) =>
      accepted(o) ||
      o.status === 409 ||
      o.status === 415 ||
      o.status === 502 ||
      (o.status === 400 && o.error?.includes("is needed and cannot be derived") === true);
    const unreached = surface
      .filter((route) => valid.some((o) => o.route === route))
      .filter((route) => !valid.some((o) => o.route === route && reached(o)))
      .map((route) => ({
        route: route.label,
        answers: valid
          .filter((o) => o.route === route)
          .map((o) => `${o.status ?? "no answer"} ${o.error ?? ""}`.trim()),
      }));
    expect(unreached, ctx).toEqual([]);
    const refused = valid
      .filter((o) => !accepted(o))
      .map((o) => `${o.status} ${o.error ?? ""} ${o.label}`);
    expect(refused.length / valid.length, `${ctx}: ${refused.join("\n")}`).toBeLessThan(0.2);
  });

  it("leaves nothing indexing: every source and crawl ends, failed ones with their error", async () => {
    const deadline = performance.now() + SETTLE_MS;
    let sources = await allSources();
    while (sources.some((s) => s.status === "indexing") && performance.now() < deadline) {
      await sleep(250);
      sources = await allSources();
    }
    const named = (s: Source) =>
      `${s.id} (${s.type}) ${origins.get(s.id) ?? shapeOf(s.source_url_or_path ?? s.name, 120)}`;
    expect(
      {
        indexing: sources.filter((s) => s.status === "indexing").map(named),
        failedWithoutError: sources
          .filter((s) => s.status === "failed" && !s.last_error)
          .map(named),
      },
      ctx,
    ).toEqual({ indexing: [], failedWithoutError: [] });
    const crawls = created.filter((path) => path.includes("/crawl/"));
    const ended = await Promise.all(
      crawls.map(
        async (path) =>
          `${path} ${await settle(path)} [${origins.get(path.split("/").at(-1) ?? "")}]`,
      ),
    );
    expect(
      ended.filter((line) => !line.includes(" settled [")),
      ctx,
    ).toEqual([]);
  });
});
