import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";
import { candidateBodies, generate, intelModules, seedArtifact } from "./fixtures.js";
import { expectWellFormed, send } from "./probe.js";
import { type Hardened, startHardened } from "./runtime.js";
import { changes, runtimeStores, type StoreSnapshot, snapshot } from "./store.js";
import { type ApiRoute, apiRoutes, fillPath, idPrefixes, unknownId } from "./surface.js";

/**
 * The tenant-isolation matrix. Workspace A (the runtime's default key) owns one resource of every
 * id kind, each carrying marker words; workspace B (the second key) has its own brand profile and
 * sources, so its searches, chat and intel really retrieve and really call the model. Then B goes
 * at every route of the manifest: A's ids answer exactly as unknown ids do, and nothing of A
 * (ids, markers, workspace id) appears in any answer to B or in any prompt built for B.
 */

let h: Hardened;
let site: Site;
let rival: CompetitorSite;
let workspaceA: string;
/** A's ids by prefix. */
const idsOfA: Record<string, string[]> = {};
/** Words only A's data contains; B never types them. */
const MARKERS = ["Zebracornium", "4242", "Aardvark", "Quokkanomics", "Platypus", "Wombatology"];
let beforeMatrix: StoreSnapshot;

const asA = (path: string, init: RequestInit & { json?: unknown } = {}) => h.rt.call(path, init);
const asB = (path: string, init: RequestInit & { json?: unknown } = {}) =>
  h.rt.call(path, { ...init, key: h.rt.otherKey });

async function jsonOf(res: Response, status: number): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>;
  expect(res.status, JSON.stringify(body)).toBe(status);
  return body;
}

beforeAll(async () => {
  site = await startSite({
    "/": respond(
      htmlPage(
        "Quokkanomics",
        `<h1>Quokkanomics pricing guide</h1>${prose("Quokkanomics pricing plan costs per month")}<a href="/plans">Plans</a>`,
      ),
    ),
    "/plans": respond(
      htmlPage("Plans", `<h1>Quokkanomics plans</h1>${prose("Quokkanomics plan pricing")}`),
    ),
  });
  rival = await startCompetitorSite();
  rival.state.jobBoard = "html";
  const first = rival.state.plans[0];
  if (first) first.name = "Platypus Starter";
  h = await startHardened({ allowPrivate: true });
  workspaceA = h.rt.runtime.workspaceId;

  // Workspace A: one of everything.
  await jsonOf(
    await asA("/api/knowledge", {
      method: "POST",
      json: {
        text: "# Pricing\nZebracornium costs 4242 credits per month. The pricing plan includes support from Aardvark.",
        name: "Zebracornium pricing",
      },
    }),
    200,
  );
  const crawl = await jsonOf(
    await asA("/api/knowledge/crawl", {
      method: "POST",
      json: { seedUrl: `${site.origin}/`, maxPages: 3 },
    }),
    200,
  );
  await jsonOf(
    await asA("/api/brand", {
      method: "PUT",
      json: {
        name: "Aardvark Quantum Holdings",
        description: "Zebracornium for Quokkanomics teams.",
        competitors: ["Platypus Inc"],
      },
    }),
    200,
  );
  const competitor = await jsonOf(
    await asA("/api/intel/competitors", { method: "POST", json: { domain: rival.origin } }),
    201,
  );
  const check = () =>
    asA(`/api/intel/competitors/${String(competitor.id)}/check`, { method: "POST" });
  await jsonOf(await check(), 200);
  if (first) first.price = "$19";
  await jsonOf(await check(), 200);
  await h.rt.runtime.queues.idle();

  const sources = (await jsonOf(await asA("/api/knowledge"), 200)).sources as Array<{
    id: string;
    status: string;
  }>;
  const events = (await jsonOf(await asA("/api/intel/events"), 200)).events as Array<{
    id: string;
  }>;
  idsOfA.kb_ = sources.map((s) => s.id);
  idsOfA.crawl_ = [String(crawl.crawlId)];
  idsOfA.comp_ = [String(competitor.id)];
  idsOfA.evt_ = events.map((e) => e.id);
  const artifact = await seedArtifact(h.rt, h.rt.key, "Wombatology persona");
  if (artifact) idsOfA.art_ = [artifact];
  const webhook = await jsonOf(
    await asA("/api/webhooks", {
      method: "POST",
      json: { url: `${site.origin}/hooks/zebracornium`, events: ["source.indexed"] },
    }),
    201,
  );
  idsOfA.wh_ = [String(webhook.id)];
  const rule = await jsonOf(
    await asA("/api/intel/alert-rules", {
      method: "POST",
      json: { name: "Price rises", kinds: ["price_increase"] },
    }),
    201,
  );
  idsOfA.rule_ = [String(rule.id)];
  const exported = await jsonOf(await asA("/api/export", { method: "POST" }), 202);
  idsOfA.exp_ = [String(exported.exportId)];
  // The fixtures are what the matrix stands on: a crawl page became a source, a change an event.
  expect(sources.map((s) => s.status)).not.toContain("indexing");
  expect(sources.length).toBeGreaterThanOrEqual(2);
  expect(idsOfA.evt_.length).toBeGreaterThan(0);

  // Workspace B: a brand and sources of its own, about the same topics in other words.
  await saveBrandOfB();
  await jsonOf(
    await asB("/api/knowledge", {
      method: "POST",
      json: { text: "# Pricing\nOur bread plan costs 12 euros per month for each office." },
    }),
    200,
  );
  await h.rt.runtime.queues.idle();
  beforeMatrix = await snapshot(runtimeStores());
}, 60_000);

afterAll(async () => {
  await h.close();
  await site.close();
  await rival.close();
});

/** Everything of A that must never reach B. */
const secretsOfA = () => [workspaceA, ...Object.values(idsOfA).flat(), ...MARKERS];

function expectNothingOfA(label: string, text: string) {
  for (const secret of secretsOfA()) {
    expect(text.includes(secret), `${label} shows A's ${secret}: ${text.slice(0, 400)}`).toBe(
      false,
    );
  }
}

/**
 * A body for a route that gets an unknown id as far as the lookup (a 404, not a 400): so that
 * B's answer for A's id is about the id and never about the body.
 */
async function bodyReachingLookup(
  call: (id: string, body: string | undefined) => Promise<{ status: number }>,
  route: ApiRoute,
  prefix: string,
): Promise<string | undefined> {
  const candidates = candidateBodies(route.body).map((b) => JSON.stringify(b));
  for (const body of candidates) {
    if ((await call(unknownId(prefix), body)).status === 404) return body;
  }
  return candidates[0];
}

/** The first valid-looking body of a route without ids. */
const plainBody = (route: ApiRoute) => {
  const [body] = candidateBodies(route.body);
  return body === undefined ? undefined : JSON.stringify(body);
};

const saveBrandOfB = async () =>
  jsonOf(
    await asB("/api/brand", {
      method: "PUT",
      json: { name: "Beta Bakery", description: "Sourdough bread for offices." },
    }),
    200,
  );

const idRoutes = apiRoutes.filter((r) => r.params.some((p) => p.idPrefix));

describe("tenant isolation: the matrix covers the whole manifest", () => {
  it("knows the id kind of every path parameter, from its example", () => {
    const unknownKinds = apiRoutes.flatMap((r) =>
      r.params.filter((p) => !p.idPrefix && !p.schema.enum).map((p) => `${r.label} {${p.name}}`),
    );
    expect(unknownKinds).toEqual([]);
  });

  it("has a resource of A for every id kind the routes take", () => {
    expect(idPrefixes().filter((prefix) => !idsOfA[prefix]?.length)).toEqual([]);
  });
});

describe("tenant isolation: B holding A's ids", () => {
  it.each(idRoutes.map((r) => [r.label, r] as const))(
    "%s answers B for every id of A exactly as for an unknown id",
    async (_label, route) => {
      const call = (id: string, body: string | undefined) =>
        send(h.rt.url, {
          method: route.method,
          path: fillPath(route, Object.fromEntries(route.params.map((p) => [p.name, id]))),
          key: h.rt.otherKey,
          ...(body ? { body, headers: { "content-type": "application/json" } } : {}),
        });
      for (const [prefix, ids] of Object.entries(idsOfA)) {
        const body = await bodyReachingLookup(call, route, prefix);
        const unknown = await call(unknownId(prefix), body);
        for (const id of ids) {
          const answer = await call(id, body);
          const label = `${route.label} as B with A's ${id}`;
          expectWellFormed(label, answer);
          expect(answer.status, `${label}: ${answer.text}`).toBe(404);
          expect(answer.text.replaceAll(id, "<id>"), label).toBe(
            unknown.text.replaceAll(unknownId(prefix), "<id>"),
          );
        }
      }
    },
  );
});

describe("tenant isolation: B's own routes", () => {
  const plain = apiRoutes.filter((r) => r.params.length === 0);

  it.each(plain.map((r) => [r.label, r] as const))(
    "%s shows B nothing of A",
    async (_label, route) => {
      const body = plainBody(route);
      const queries = [
        "",
        ...route.query
          .filter((q) => /id$/i.test(q.name))
          .flatMap((q) =>
            Object.values(idsOfA)
              .flat()
              .map((id) => `?${q.name}=${id}`),
          ),
      ];
      for (const query of queries) {
        const answer = await send(h.rt.url, {
          method: route.method,
          path: `${route.path}${query}`,
          key: h.rt.otherKey,
          ...(body ? { body, headers: { "content-type": "application/json" } } : {}),
        });
        const label = `${route.label}${query} as B`;
        expectWellFormed(label, answer);
        expectNothingOfA(label, answer.text);
      }
    },
  );

  it("pages B's lists with A's cursors without showing anything of A", async () => {
    const lists = plain.filter(
      (r) => r.method === "GET" && r.query.some((q) => q.name === "cursor"),
    );
    let cursors = 0;
    for (const route of lists) {
      const page = (await (await asA(`${route.path}?limit=1`)).json()) as { nextCursor?: string };
      if (!page.nextCursor) continue;
      cursors++;
      const answer = await send(h.rt.url, {
        method: "GET",
        path: `${route.path}?cursor=${encodeURIComponent(page.nextCursor)}`,
        key: h.rt.otherKey,
      });
      expectWellFormed(`${route.path} with A's cursor`, answer);
      expectNothingOfA(`${route.path} with A's cursor`, answer.text);
    }
    // A has several sources: that list at least has a second page.
    expect(cursors).toBeGreaterThanOrEqual(1);
  });

  it("finds nothing of A when B searches for what A's sources say", async () => {
    const res = await asB("/api/knowledge/search", {
      method: "POST",
      json: { query: "pricing plan costs per month" },
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    // B's own bread plan matches, and only it.
    expect((JSON.parse(text) as { results: unknown[] }).results.length).toBeGreaterThan(0);
    expectNothingOfA("search as B", text);
    for (const query of ["credits support", "Zebracornium", "Quokkanomics guide"]) {
      // A finds its own text and crawled pages with these words; B finds nothing.
      const own = await asA("/api/knowledge/search", { method: "POST", json: { query } });
      expect(((await own.json()) as { results: unknown[] }).results.length, query).toBeGreaterThan(
        0,
      );
      const probe = await asB("/api/knowledge/search", { method: "POST", json: { query } });
      expect(await probe.json(), query).toEqual({ results: [] });
    }
  });
});

describe("tenant isolation: what the model sees for B", () => {
  // The matrix above saved B's brand from the schema's example; put B's own back.
  beforeAll(saveBrandOfB);

  /** Runs a call as B and answers what the model was sent meanwhile, as one text. */
  /**
   * What the model was sent for B's `question`: the requests made meanwhile that carry it (its
   * embedding, the chat prompt). The runtime's own work for A (a late embedding, a brief) may
   * reach the shared fake model in the same moment; it is not B's prompt, and a passage of A's
   * in B's prompt would still be found here, beside B's question.
   */
  async function promptsDuring(
    question: string,
    call: () => Promise<Response>,
  ): Promise<{ text: string; sent: string }> {
    const from = h.model.requests.length;
    const res = await call();
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const sent = h.model.requests
      .slice(from)
      .map((r) => JSON.stringify(r.body))
      .filter((body) => body.includes(question))
      .join("\n");
    return { text, sent };
  }

  it("builds B's chat prompt from B's brand and sources only", async () => {
    const question = "What does the pricing plan cost per month, and who are we?";
    const { text, sent } = await promptsDuring(question, () =>
      asB("/api/chat", { method: "POST", json: { message: question } }),
    );
    expect(sent).toContain("Beta Bakery");
    expect(sent).toContain("12 euros per month");
    expectNothingOfA("chat prompt for B", sent);
    expectNothingOfA("chat answer to B", text);
  });

  it("streams B's chat from B's data only", async () => {
    const question = "Which plan costs credits per month?";
    const { text, sent } = await promptsDuring(question, () =>
      asB("/api/chat", { method: "POST", json: { message: question, stream: true } }),
    );
    expect(text).toContain("event: done");
    expect(sent).toContain("Beta Bakery");
    expectNothingOfA("streamed chat prompt for B", sent);
    expectNothingOfA("streamed chat answer to B", text);
  });

  it("builds every intel module's prompt for B from B's data only, even given A's competitor", async () => {
    const intel = intelModules();
    if (!intel) return;
    const [competitorId] = idsOfA.comp_ ?? [];
    for (const module of intel.modules) {
      const from = h.model.requests.length;
      const generated = await generate(h.rt, module, h.rt.otherKey);
      // The fake model answers the smallest instance of the schema, which some modules' stricter
      // rules (six journey stages) refuse as llm_error: what matters here is what it was sent.
      if (generated.status !== 200) {
        expect(generated, module).toMatchObject({
          status: 502,
          body: { error: { code: "llm_error" } },
        });
      }
      const sent = h.model.requests.slice(from).map((r) => JSON.stringify(r.body));
      expect(sent.length, `${module} called the model`).toBeGreaterThan(0);
      expect(sent.join("\n")).toContain("Beta Bakery");
      expectNothingOfA(`${module} prompt for B`, sent.join("\n"));
      expectNothingOfA(`${module} answer to B`, JSON.stringify(generated.body));
    }
    // A module that takes a tracked competitor, handed A's: unknown to B, as any other id is.
    const withCompetitor = intel.modules.find((m) => m === "competitor");
    if (withCompetitor && competitorId) {
      const from = h.model.requests.length;
      const key = h.rt.otherKey;
      const theirs = await generate(h.rt, withCompetitor, key, { competitorId });
      const unknown = await generate(h.rt, withCompetitor, key, {
        competitorId: unknownId("comp_"),
      });
      expect(theirs.status, JSON.stringify(theirs.body)).toBe(404);
      expect(JSON.stringify(theirs.body).replaceAll(competitorId, "<id>")).toBe(
        JSON.stringify(unknown.body).replaceAll(unknownId("comp_"), "<id>"),
      );
      const sent = h.model.requests.slice(from).map((r) => JSON.stringify(r.body));
      expectNothingOfA("competitor module prompt for B", sent.join("\n"));
    }
  });
});

describe("tenant isolation: A afterwards", () => {
  it("keeps every item and object of A exactly as it was before B's requests", async () => {
    const after = await snapshot(runtimeStores());
    expect(changes(beforeMatrix, after).filter((line) => line.includes(workspaceA))).toEqual([]);
    const sources = (await jsonOf(await asA("/api/knowledge"), 200)).sources as unknown[];
    expect(sources).toHaveLength(idsOfA.kb_?.length ?? 0);
  });
});
