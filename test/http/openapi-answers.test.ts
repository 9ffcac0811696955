import { setTimeout as sleep } from "node:timers/promises";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsPlugin from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Hardened, startHardened } from "../hardening/runtime.js";
import { readEvents } from "../intel/setup.js";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

/**
 * Every route of `/openapi.json` driven with realistic requests against the in-process runtime,
 * as a client generated from the document would send them. Each answer is recorded and its JSON
 * body validated against the schema the document gives for its status, with a strict JSON Schema
 * 2020-12 validator (Ajv, `strict: true`, every `components/schemas` entry registered, the
 * document's `additionalProperties` as generated): an undocumented status, an undocumented field,
 * a missing one or a wrong type fails. The operations answered with a 2xx must be exactly the
 * operations documented, so a route added without coverage here fails too.
 */

type Json = Record<string, unknown>;
type Schema = Json;

interface Operation {
  operationId: string;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

interface Recorded {
  operationId: string;
  label: string;
  status: number;
  problems: string[];
}

let h: Hardened;
let site: Site;
let slowSite: Site;
let rival: CompetitorSite;
let receiver: Receiver;
let doc: Document;
let ajv: Ajv2020;
const recorded: Recorded[] = [];

const addFormats = addFormatsPlugin as unknown as (ajv: Ajv2020) => Ajv2020;
const refId = (name: string) => `urn:kb-intel:openapi:schemas:${name}`;
/** A schema of the document with its `#/components/schemas/...` references made absolute. */
const absolute = (schema: unknown): Schema =>
  JSON.parse(
    JSON.stringify(schema).replace(/"#\/components\/schemas\/([^"]+)"/g, (_, name: string) =>
      JSON.stringify(refId(name)),
    ),
  ) as Schema;

/** A strict validator knowing every component; OpenAPI's own annotations are keywords to it. */
function validatorOf(document: Document): Ajv2020 {
  const validator = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(validator);
  // Annotations of OpenAPI 3.1 that JSON Schema 2020-12 does not define; they constrain nothing.
  validator.addVocabulary(["example", "discriminator"]);
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    validator.addSchema({ ...absolute(schema), $id: refId(name) });
  }
  return validator;
}

const compiled = new Map<string, ValidateFunction>();
function validate(schema: Schema, value: unknown): string[] {
  const key = JSON.stringify(schema);
  let fn = compiled.get(key);
  if (!fn) {
    fn = ajv.compile(absolute(schema));
    compiled.set(key, fn);
  }
  if (fn(value)) return [];
  return (fn.errors ?? []).map(
    (e) => `${e.instancePath || "(body)"} ${e.message ?? ""} ${JSON.stringify(e.params)}`,
  );
}

/** What is wrong with an answer, measured against the document: [] when it fits. */
async function problemsOf(operation: Operation, res: Response, text: string): Promise<string[]> {
  const documented = operation.responses[String(res.status)];
  if (!documented) return [`status ${res.status} is not documented: ${text.slice(0, 200)}`];
  const type = (res.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
  if (!documented.content) {
    return text === "" ? [] : [`status ${res.status} documents no body, got ${type}`];
  }
  const json = documented.content["application/json"]?.schema;
  if (type === "application/json") {
    if (!json) return [`status ${res.status} documents no JSON body`];
    return validate(json, JSON.parse(text));
  }
  if (type === "text/event-stream" && documented.content[type] && json) {
    // The stream ends with a `done` event carrying the whole answer, as the JSON answer is.
    const events = await readEvents(new Response(text));
    const done = events.find((e) => e.event === "done");
    return done ? validate(json, done.data) : ["the stream has no `done` event"];
  }
  // A file (an export) fits when its type is one documented; its content its own tests check.
  if (documented.content[type] && !json) return [];
  return [`status ${res.status} documents no ${type || "untyped"} body`];
}

interface CallOptions {
  params?: Record<string, string>;
  query?: string;
  json?: unknown;
  form?: FormData;
  key?: string | null;
  headers?: Record<string, string>;
}

/**
 * Sends a request to a documented route (`method` and path template as the document has them),
 * records the answer with what is wrong with it, and answers its status and JSON body.
 */
async function call<T = Json>(
  method: string,
  template: string,
  { params = {}, query = "", json, form, key, headers }: CallOptions = {},
): Promise<{ status: number; body: T }> {
  const operation = doc.paths[template]?.[method.toLowerCase()];
  if (!operation) throw new Error(`/openapi.json has no ${method} ${template}`);
  const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${method} ${template} needs {${name}}`);
    return encodeURIComponent(value);
  });
  const res = await h.rt.call(`${path}${query}`, {
    method,
    ...(json === undefined ? {} : { json }),
    ...(form ? { body: form } : {}),
    ...(headers ? { headers } : {}),
    ...(key === undefined ? {} : { key }),
  });
  const text = await res.text();
  const label = `${method} ${path}${query}`;
  recorded.push({
    operationId: operation.operationId,
    label,
    status: res.status,
    problems: await problemsOf(operation, res, text),
  });
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    body: (type.includes("application/json") && text ? JSON.parse(text) : text) as T,
  };
}

/** Sends a request until `done` holds of its answer (every answer recorded). */
async function until<T = Json>(
  method: string,
  template: string,
  options: CallOptions,
  done: (answer: { status: number; body: T }) => boolean,
  timeoutMs = 60_000,
): Promise<{ status: number; body: T }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await call<T>(method, template, options);
    if (done(answer)) return answer;
    if (Date.now() > deadline) {
      throw new Error(`${method} ${template}: gave up on ${JSON.stringify(answer).slice(0, 300)}`);
    }
    await sleep(100);
  }
}

/** The problems of answers recorded since `from`, one line each. */
const problemsSince = (from: number) =>
  recorded
    .slice(from)
    .filter((r) => r.problems.length > 0)
    .map((r) => `${r.label} -> ${r.status}: ${r.problems.join("; ")}`);

/** A group of requests: its answers must all match the document. */
function drive(name: string, run: () => Promise<void>, timeout = 120_000) {
  it(
    name,
    async () => {
      const from = recorded.length;
      await run();
      expect(problemsSince(from)).toEqual([]);
    },
    timeout,
  );
}

/** Ids the groups create and later groups use. */
const ids: Record<string, string> = {};
const idOf = (name: string) => {
  const id = ids[name];
  if (!id) throw new Error(`no ${name} yet`);
  return id;
};

beforeAll(async () => {
  site = await startSite({
    "/": respond(
      htmlPage(
        "Quokka Analytics",
        `<h1>Quokka Analytics</h1>${prose("Quokka Analytics pricing")}<a href="/plans">Plans</a> <a href="/guide">Guide</a>`,
      ),
    ),
    "/plans": respond(htmlPage("Plans", `<h1>Plans</h1>${prose("Quokka plans cost per month")}`)),
    "/guide": respond(htmlPage("Guide", `<h1>Guide</h1>${prose("Onboarding guide")}`)),
  });
  // A site whose pages take their time: a crawl of it is still running when it is cancelled.
  slowSite = await startSite({
    "/": async (_req, res) => {
      await sleep(3000);
      res.writeHead(200, { "content-type": "text/html" }).end(htmlPage("Slow", prose("Slow")));
    },
  });
  rival = await startCompetitorSite();
  rival.state.jobBoard = "html";
  receiver = await startReceiver();
  h = await startHardened({ allowPrivate: true });
  doc = (await (await fetch(`${h.rt.url}/openapi.json`)).json()) as Document;
  ajv = validatorOf(doc);
}, 60_000);

afterAll(async () => {
  await h?.close();
  await Promise.all([site?.close(), slowSite?.close(), rival?.close(), receiver?.close()]);
});

describe("every answer matches the schema /openapi.json documents for its status", () => {
  it("compiles every response schema of the document with a strict validator", () => {
    const failures: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const schema = response.content?.["application/json"]?.schema;
          try {
            if (schema) validate(schema, null);
          } catch (err) {
            failures.push(`${method} ${path} ${status}: ${(err as Error).message}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it("documents every object of a success answer closed, so an undocumented field fails", () => {
    const open = new Set<string>();
    const seen = new Set<string>();
    const walk = (schema: Schema | undefined, where: string): void => {
      if (!schema) return;
      if (typeof schema.$ref === "string") {
        const name = schema.$ref.split("/").at(-1) ?? "";
        if (seen.has(name)) return;
        seen.add(name);
        walk(doc.components.schemas[name], name);
        return;
      }
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      if (schema.type === "object" && schema.additionalProperties === undefined) open.add(where);
      for (const [name, property] of Object.entries(properties)) walk(property, `${where}.${name}`);
      walk(schema.items as Schema | undefined, `${where}[]`);
      for (const key of ["oneOf", "anyOf", "allOf"]) {
        for (const branch of (schema[key] ?? []) as Schema[]) walk(branch, where);
      }
    };
    for (const operations of Object.values(doc.paths)) {
      for (const operation of Object.values(operations)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (status.startsWith("2")) {
            walk(
              response.content?.["application/json"]?.schema,
              `${operation.operationId} ${status}`,
            );
          }
        }
      }
    }
    const allowed = (where: string) =>
      // An intel module's output is the model's answer parsed with zod's default (unknown keys
      // dropped, lib/llm/structured.ts): it cannot carry an undocumented field, and a closed
      // schema would turn a model's extra key into a failed generation.
      /^(\w+Output|\w+Artifact\.output)([.[]|$)/.test(where);
    expect([...open].filter((where) => !allowed(where))).toEqual([]);
  });

  drive("the service, the brand profile and usage", async () => {
    expect((await call("GET", "/health", { key: null })).status).toBe(200);
    expect((await call("GET", "/api/brand")).status).toBe(404);
    const brand = {
      name: "Quokka Analytics",
      domain: "quokka-analytics.example",
      description: "Product analytics for B2B SaaS marketing teams.",
      audience: "Heads of growth at B2B SaaS companies with 50-500 employees",
      tone: "Plain-spoken and confident",
      valueProps: ["Answers in minutes, not weeks"],
      products: ["Quokka Insights", "Quokka Reports"],
      differentiators: ["Privacy-first tracking"],
      competitors: ["Rival Labs"],
    };
    expect((await call("PUT", "/api/brand", { json: brand })).status).toBe(200);
    expect((await call("GET", "/api/brand")).status).toBe(200);
    expect((await call("GET", "/api/usage")).status).toBe(200);
  });

  drive("knowledge sources: text, URLs and files, listed, searched, changed", async () => {
    const text = await call<{ id: string }>("POST", "/api/knowledge", {
      json: {
        text: "# Pricing\nQuokka Insights costs 49 euros per seat per month, billed yearly.",
        name: "Pricing notes",
      },
    });
    expect(text.status).toBe(200);
    ids.text = text.body.id;
    const url = await call<{ id: string }>("POST", "/api/knowledge", {
      json: { url: `${site.origin}/plans`, refresh: "weekly" },
    });
    expect(url.status).toBe(200);
    ids.url = url.body.id;
    // The same URL again: the source it has, refreshed.
    expect(
      (await call("POST", "/api/knowledge", { json: { url: `${site.origin}/plans` } })).status,
    ).toBe(200);
    const form = new FormData();
    form.set("file", new File(["# Guide\nHow teams onboard to Quokka."], "guide.md"));
    form.set("name", "Onboarding guide");
    const file = await call<{ id: string }>("POST", "/api/knowledge", { form });
    expect(file.status).toBe(200);
    ids.file = file.body.id;
    for (const name of ["text", "url", "file"]) {
      const settled = await until<{ status: string }>(
        "GET",
        "/api/knowledge/{id}",
        { params: { id: idOf(name) } },
        (a) => a.body.status !== "indexing",
      );
      expect(settled.body.status, name).toBe("indexed");
    }
    expect((await call("GET", "/api/knowledge")).status).toBe(200);
    expect(
      (await call("GET", "/api/knowledge", { query: "?enabled=1&type=text&limit=5" })).status,
    ).toBe(200);

    const patch = (json: unknown) =>
      call("PATCH", "/api/knowledge/{id}", { params: { id: idOf("url") }, json });
    expect((await patch({ enabled: 0 })).status).toBe(200);
    expect((await patch({ enabled: true, name: "Quokka plans" })).status).toBe(200);
    expect((await patch({ refresh: null })).status).toBe(200);

    const search = (json: Json) => call("POST", "/api/knowledge/search", { json });
    expect((await search({ query: "price per seat" })).status).toBe(200);
    expect((await search({ query: "price", source_ids: idOf("text"), type: "text" })).status).toBe(
      200,
    );
    expect(
      (await search({ query: "plans", type: ["url", "file"], crawl_id: [], limit: 3 })).status,
    ).toBe(200);
    expect((await patch({ metadata: { team: "sales", year: 2025, tags: ["a"] } })).status).toBe(
      200,
    );
    const filtered = await search({
      query: "plans",
      filters: {
        type: "or",
        filters: [
          { type: "eq", key: "tags", value: "a" },
          { type: "gt", key: "year", value: 2000 },
        ],
      },
    });
    expect(filtered.status).toBe(200);
    const span = await call("GET", "/api/knowledge/{id}/text", {
      params: { id: idOf("text") },
      query: "?start=0&end=20",
    });
    expect(span.status).toBe(200);
    const evaluated = await call("POST", "/api/knowledge/eval", {
      json: { questions: [{ question: "price per seat", source_ids: [idOf("text")] }], k: 3 },
    });
    expect(evaluated.status).toBe(200);

    expect(
      (await call("POST", "/api/knowledge/{id}/reindex", { params: { id: idOf("file") } })).status,
    ).toBe(200);
    const upload = await call("POST", "/api/knowledge/uploads", {
      json: { filename: "report.pdf", contentType: "application/pdf", bytes: 5_000_000 },
    });
    expect(upload.status).toBe(200);
  });

  drive("crawls: started, followed, scheduled, cancelled, their sources deleted", async () => {
    const started = await call<{ crawlId: string }>("POST", "/api/knowledge/crawl", {
      json: { seedUrl: `${site.origin}/`, maxPages: 3 },
    });
    expect(started.status).toBe(200);
    const crawlId = started.body.crawlId;
    ids.crawl = crawlId;
    const params = { crawlId };
    await until<{ status: string }>(
      "GET",
      "/api/knowledge/crawl/{crawlId}",
      { params },
      (a) => a.body.status !== "indexing",
    );
    await h.rt.runtime.queues.idle();
    expect((await call("GET", "/api/knowledge/crawl")).status).toBe(200);
    expect((await call("GET", "/api/knowledge/crawl/{crawlId}/pages", { params })).status).toBe(
      200,
    );
    expect(
      (
        await call("GET", "/api/knowledge/crawl/{crawlId}/pages", {
          params,
          query: "?status=indexed&limit=2",
        })
      ).status,
    ).toBe(200);
    const crawlPages = await call("GET", "/api/knowledge", { query: `?crawl_id=${crawlId}` });
    expect(crawlPages.status).toBe(200);
    const patch = (refresh: string | null) =>
      call("PATCH", "/api/knowledge/crawl/{crawlId}", { params, json: { refresh } });
    expect((await patch("weekly")).status).toBe(200);
    expect((await patch(null)).status).toBe(200);
    // A finished crawl cannot be cancelled; a running one can.
    expect((await call("DELETE", "/api/knowledge/crawl/{crawlId}", { params })).status).toBe(409);
    const slow = await call<{ crawlId: string }>("POST", "/api/knowledge/crawl", {
      json: { seedUrl: `${slowSite.origin}/`, maxPages: 1 },
    });
    expect(slow.status).toBe(200);
    expect(
      (
        await call("DELETE", "/api/knowledge/crawl/{crawlId}", {
          params: { crawlId: slow.body.crawlId },
        })
      ).status,
    ).toBe(200);
    expect(
      (await call("DELETE", "/api/knowledge/crawl/{crawlId}/sources", { params })).status,
    ).toBe(200);
  });

  drive("competitors: tracked, checked, changed, their events listed and marked", async () => {
    const created = await call<{ id: string }>("POST", "/api/intel/competitors", {
      json: { domain: rival.origin },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    ids.competitor = id;
    expect(
      (await call("POST", "/api/intel/competitors", { json: { domain: rival.origin } })).status,
    ).toBe(409);
    expect((await call("GET", "/api/intel/competitors/{id}", { params: { id } })).status).toBe(200);
    const weekly = { params: { id }, json: { cadence: "weekly" } };
    expect((await call("PATCH", "/api/intel/competitors/{id}", weekly)).status).toBe(200);
    const check = () => call("POST", "/api/intel/competitors/{id}/check", { params: { id } });
    expect((await check()).status).toBe(200);
    const [starter] = rival.state.plans;
    if (starter) starter.price = "$15";
    rival.state.jobs.push({
      id: 104,
      title: "Growth Marketer",
      team: "Marketing",
      location: "Paris",
    });
    expect((await check()).status).toBe(200);
    expect((await call("GET", "/api/intel/competitors/{id}", { params: { id } })).status).toBe(200);
    for (const format of ["md", "docx"]) {
      const card = await call("GET", "/api/intel/competitors/{id}/battlecard", {
        params: { id },
        query: `?format=${format}`,
      });
      expect(card.status).toBe(200);
    }
    expect((await call("GET", "/api/intel/competitors")).status).toBe(200);

    const events = await call<{ events: Array<{ id: string }> }>("GET", "/api/intel/events");
    expect(events.status).toBe(200);
    expect(events.body.events.length).toBeGreaterThan(0);
    const eventId = events.body.events[0]?.id ?? "";
    expect(
      (
        await call("PATCH", "/api/intel/events/{id}", {
          params: { id: eventId },
          json: { isRead: true, isActioned: true },
        })
      ).status,
    ).toBe(200);
    const filtered = await call<{ events: unknown[] }>("GET", "/api/intel/events", {
      query: `?isRead=1&isActioned=true&severity=low,medium&severity=high&severity=critical&competitorId=${id}`,
    });
    expect(filtered.body.events).toHaveLength(1);
    const since = "?kind=price_increase&since=2000-01-01T00:00:00Z&alert=true";
    expect((await call("GET", "/api/intel/events", { query: since })).status).toBe(200);
    expect(
      (await call("GET", "/api/intel/competitors/{id}/history", { params: { id } })).status,
    ).toBe(200);
    expect(
      (await call("GET", "/api/intel/competitors/{id}/prices", { params: { id } })).status,
    ).toBe(200);
    const rule = {
      name: "Big price moves",
      kinds: ["price_increase", "price_decrease"],
      conditions: [{ field: "abs_percent_change", op: ">=", value: 10 }],
    };
    const made = await call<{ id: string }>("POST", "/api/intel/alert-rules", { json: rule });
    expect(made.status).toBe(201);
    expect((await call("GET", "/api/intel/alert-rules")).status).toBe(200);
    const tested = await call("POST", "/api/intel/alert-rules/test", { json: { rule } });
    expect(tested.status).toBe(200);
    const gone = { params: { id: made.body.id } };
    expect((await call("DELETE", "/api/intel/alert-rules/{id}", gone)).status).toBe(204);
    expect((await call("POST", "/api/intel/competitors/check-all")).status).toBe(202);
    await h.rt.runtime.queues.idle();
  });

  drive("chat, as JSON and as a stream", async () => {
    const question = { message: "What does Quokka Insights cost per seat?" };
    expect((await call("POST", "/api/chat", { json: question })).status).toBe(200);
    const streamed = await call("POST", "/api/chat", {
      json: { ...question, source_ids: idOf("text") },
      headers: { accept: "text/event-stream" },
    });
    expect(streamed.status).toBe(200);
  });

  drive("every intel module, an answer saved, and artifacts", async () => {
    const inputs: Record<string, Json> = {
      persona: { segment: "Heads of growth at B2B SaaS companies", role: "VP Growth", save: true },
      competitor: { competitorId: idOf("competitor"), segment: "Mid-market SaaS" },
      gtm: { product: "Quokka Insights", region: "DACH", timeline: "Q3 2026" },
      journey: { segment: "Marketing operations leads", product: "Quokka Reports" },
      messaging: { product: "Quokka Insights", audiences: ["Heads of growth", "Analysts"] },
      kpi: { goal: "Grow self-serve revenue", motion: "product-led" },
    };
    const answers: Record<string, { artifact: Json; artifactId?: string }> = {};
    for (const [module, json] of Object.entries(inputs)) {
      const answer = await call<{ artifact: Json; artifactId?: string }>(
        "POST",
        "/api/intel/{module}",
        { params: { module }, json },
      );
      expect(answer.status, `${module}: ${JSON.stringify(answer.body).slice(0, 300)}`).toBe(200);
      answers[module] = answer.body;
    }
    const saved = await call<{ id: string }>("POST", "/api/artifacts", {
      json: answers.kpi?.artifact,
    });
    expect(saved.status).toBe(201);
    const id = saved.body.id;
    expect((await call("GET", "/api/artifacts")).status).toBe(200);
    expect(
      (await call("GET", "/api/artifacts", { query: "?module=kpi,persona&limit=1" })).status,
    ).toBe(200);
    expect((await call("GET", "/api/artifacts/{id}", { params: { id } })).status).toBe(200);
    const persona = answers.persona?.artifactId ?? "";
    expect((await call("GET", "/api/artifacts/{id}", { params: { id: persona } })).status).toBe(
      200,
    );
    expect(
      (
        await call("PATCH", "/api/artifacts/{id}", {
          params: { id },
          json: { title: "KPIs for self-serve growth" },
        })
      ).status,
    ).toBe(200);
    for (const format of ["md", "docx"]) {
      const file = await call("GET", "/api/artifacts/{id}/export", {
        params: { id },
        query: `?format=${format}`,
      });
      expect(file.status).toBe(200);
    }
    expect((await call("DELETE", "/api/artifacts/{id}", { params: { id } })).status).toBe(204);
  });

  drive("webhooks: registered, tested, their deliveries listed", async () => {
    const created = await call<{ id: string }>("POST", "/api/webhooks", {
      json: {
        url: receiver.url,
        events: ["source.indexed", "competitor.event"],
        description: "Marketing ops",
      },
    });
    expect(created.status).toBe(201);
    const params = { id: created.body.id };
    expect((await call("GET", "/api/webhooks")).status).toBe(200);
    expect((await call("GET", "/api/webhooks/{id}", { params })).status).toBe(200);
    receiver.answer(500);
    expect((await call("POST", "/api/webhooks/{id}/test", { params })).status).toBe(202);
    await receiver.waitFor(1);
    await until<{ deliveries: unknown[] }>(
      "GET",
      "/api/webhooks/{id}/deliveries",
      { params },
      (a) => a.body.deliveries.length > 0,
    );
    expect((await call("DELETE", "/api/webhooks/{id}", { params })).status).toBe(204);
  });

  drive("exports: started, watched until ready, then downloaded", async () => {
    const started = await call<{ exportId: string; status: string }>("POST", "/api/export");
    expect(started.status).toBe(202);
    const params = { exportId: started.body.exportId };
    const ready = await until<{ status: string; download: { url: string } | null }>(
      "GET",
      "/api/export/{exportId}",
      { params },
      (a) => a.body.status === "ready",
    );
    const bundle = await fetch(ready.body.download?.url ?? "");
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).trimEnd().split("\n").at(-1)).toContain('"kind":"end"');
  });

  drive("errors: no key, unknown ids and invalid requests, on every operation", async () => {
    const unknown: Record<string, string> = {
      id: "x_01J0000000000000000000ZZZZ",
      crawlId: "crawl_01J0000000000000000000ZZZZ",
      module: "persona",
    };
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const method of Object.keys(operations)) {
        if (path === "/health") continue;
        const params = Object.fromEntries(
          [...path.matchAll(/\{([^}]+)\}/g)].map(([, name = ""]) => [name, unknown[name] ?? "x"]),
        );
        const upper = method.toUpperCase();
        expect((await call(upper, path, { params, key: null })).status).toBe(401);
        expect((await call(upper, path, { params, query: "?unknown=1" })).status).toBe(400);
      }
    }
    for (const path of [
      "/api/knowledge/{id}",
      "/api/intel/competitors/{id}",
      "/api/webhooks/{id}",
    ]) {
      expect((await call("GET", path, { params: { id: unknown.id ?? "" } })).status).toBe(404);
    }
    const exportId = "exp_01J0000000000000000000ZZZZ";
    expect((await call("GET", "/api/export/{exportId}", { params: { exportId } })).status).toBe(
      404,
    );
    expect(
      (await call("POST", "/api/intel/{module}", { params: { module: "swot" }, json: {} })).status,
    ).toBe(404);
  });

  drive("deletions", async () => {
    const competitor = { params: { id: idOf("competitor") } };
    expect((await call("DELETE", "/api/intel/competitors/{id}", competitor)).status).toBe(204);
    expect(
      (await call("DELETE", "/api/knowledge/{id}", { params: { id: idOf("text") } })).status,
    ).toBe(204);
  });

  it("answered every documented operation with a 2xx that matches its schema", () => {
    const documented = Object.values(doc.paths).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    );
    const answered = new Set(
      recorded.filter((r) => r.status < 300 && r.problems.length === 0).map((r) => r.operationId),
    );
    expect([...answered].sort()).toEqual([...new Set(documented)].sort());
    expect(problemsSince(0)).toEqual([]);
  });
});
