import { z } from "@hono/zod-openapi";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { KeyStore } from "../../lib/auth/keys.js";
import { Competitors } from "../../lib/competitors/competitors.js";
import { Events } from "../../lib/competitors/events.js";
import { Snapshots } from "../../lib/competitors/snapshot.js";
import { createServiceApp } from "../../lib/http/app.js";
import { bearerAuth } from "../../lib/http/auth.js";
import { openApiDocument } from "../../lib/http/docs.js";
import { Artifacts } from "../../lib/intel/artifacts/artifacts.js";
import { artifactsRoutes } from "../../lib/intel/artifacts/routes.js";
import { CompetitorIntel } from "../../lib/intel/competitor-context.js";
import { generateContract } from "../../lib/intel/generate/contract.js";
import { IntelGenerator } from "../../lib/intel/generate/generator.js";
import { generateRoutes } from "../../lib/intel/generate/routes.js";
import { ALL_MODULES } from "../../lib/intel/modules/index.js";
import type { IntelModule } from "../../lib/intel/modules/module.js";
import { Quotas } from "../../lib/limits/quotas.js";
import type { LlmSettings } from "../../lib/llm/settings.js";
import { strictJsonSchema } from "../../lib/llm/strict-mode.js";
import { llmFor } from "../llm/helpers.js";
import { retrieverOn, roomyQuotas } from "../support/aws.js";
import type { RecordedRequest } from "../support/fake-openai.js";
import { type Intel, startIntel, type Workspace } from "./setup.js";

type Json = { [key: string]: unknown };

/** The smallest answer a module's output schema accepts: lists as long as their minimum. */
function sample(schema: Json): unknown {
  if (Array.isArray(schema.enum)) return schema.enum[0];
  switch (schema.type) {
    case "object": {
      const required = (schema.required as string[] | undefined) ?? [];
      const properties = Object.entries((schema.properties as Record<string, Json>) ?? {});
      return Object.fromEntries(
        properties.filter(([key]) => required.includes(key)).map(([key, p]) => [key, sample(p)]),
      );
    }
    case "array":
      return Array.from({ length: Number(schema.minItems ?? 1) }, () =>
        sample(schema.items as Json),
      );
    case "integer":
      return 0;
    default:
      return "example";
  }
}

const outputOf = (module: IntelModule) => sample(z.toJSONSchema(module.output) as Json) as Json;
const named = (name: string) => ALL_MODULES.find((m) => m.name === name) as IntelModule;

/** The module's sample answer, its first text citing the passage that contains `text`. */
const citing = (module: IntelModule, text: string) => (request: RecordedRequest) => {
  const prompt = String(
    (request.body as { messages: Array<{ content: string }> }).messages.at(-1)?.content,
  );
  const block = prompt.split("<<<DATA ").find((b) => b.includes(text)) ?? "";
  const n = /n="(\d+)"/.exec(block)?.[1];
  const output = outputOf(module);
  const first = Object.keys(output)[0] as string;
  const value = output[first];
  if (typeof value === "string") output[first] = `${value} [${n}]`;
  else (value as Json)[Object.keys(value as Json)[0] as string] = `example [${n}]`;
  return { json: output };
};

let intel: Intel;
let acme: Workspace;
let other: Workspace;
let unbranded: Workspace;
let competitorId: string;
const sourceIds = new Map<string, string>();

const CUSTOMERS =
  "# Customers\nOur customers are heads of growth at B2B SaaS companies. Their biggest pain is reporting that takes days. The Team plan costs $99 per month.";
const RIVAL =
  "# Rival Labs\nRival Labs sells a cheaper reporting tool to heads of growth, without SOC 2.";

const BRAND = {
  name: "Acme Analytics",
  description: "Product analytics for B2B SaaS teams.",
  tone: "Plain-spoken",
  differentiators: ["SOC 2 Type II certified"],
};

interface Options {
  llm?: Partial<LlmSettings>;
  quotas?: Quotas;
}

/** The intel modules and artifacts as the intel function serves them, over the shared stores. */
function intelApp(options: Options = {}) {
  const { table } = intel.aws;
  const llm = llmFor(intel.fake, options.llm);
  const generator = new IntelGenerator({
    retriever: retrieverOn(intel.aws, llm.embedder),
    brands: intel.brands,
    llm: llm.chat,
    competitors: new CompetitorIntel({
      competitors: new Competitors({ table }),
      events: new Events(table),
      snapshots: new Snapshots(intel.aws.blobs),
    }),
    quotas: options.quotas ?? roomyQuotas(table),
    artifacts: new Artifacts(table),
  });
  return createServiceApp({
    authenticate: bearerAuth(new KeyStore(table, 0)),
    modules: [generateRoutes({ generator }), artifactsRoutes({ artifacts: new Artifacts(table) })],
  });
}

let app: ReturnType<typeof intelApp>;

async function call(
  workspace: Workspace,
  method: string,
  path: string,
  json?: unknown,
  via = app,
): Promise<{ status: number; body: Json }> {
  const res = await via.request(path, {
    method,
    headers: {
      authorization: `Bearer ${workspace.key}`,
      ...(json === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json };
}

const generate = (workspace: Workspace, module: string, inputs: unknown, via = app) =>
  call(workspace, "POST", `/api/intel/${module}`, inputs, via);

beforeAll(async () => {
  intel = await startIntel();
  app = intelApp();
  [acme, other, unbranded] = await Promise.all([
    intel.workspace("Acme"),
    intel.workspace("Other"),
    intel.workspace("Unbranded"),
  ]);
  const add = (ws: Workspace, text: string, name: string) => intel.addSource(ws.id, text, name);
  sourceIds.set(CUSTOMERS, (await add(acme, CUSTOMERS, "Customer research")).id);
  sourceIds.set(RIVAL, (await add(acme, RIVAL, "Rival notes")).id);
  const retired = await add(
    acme,
    "# Legacy\nThe legacy Gold plan for heads of growth and their reporting costs $500.",
    "Retired pricing",
  );
  await intel.sources.setEnabled(acme.id, retired.id, false);
  await add(
    other,
    "# Other customers\nOther Corp customers are heads of growth; reporting, pricing, revenue.",
    "Other research",
  );
  for (const ws of [acme, other]) await intel.brands.put(ws.id, BRAND);

  const { table, blobs } = intel.aws;
  const competitors = new Competitors({ table, snapshots: new Snapshots(blobs) });
  const events = new Events(table);
  const change = (title: string, id: string) => ({
    competitorId: id,
    competitorDomain: "rival-labs.com",
    type: "pricing" as const,
    severity: "high" as const,
    title,
    aiBrief: `${title}: a brief.`,
    details: {
      change: "price_increased" as const,
      subject: "Pro",
      before: 10,
      after: 12,
      url: null,
    },
  });
  competitorId = (await competitors.create(acme.id, "https://www.rival-labs.com/")).id;
  // What a check saw on its site: plans, open roles, posts and the homepage's claims.
  const tracked = await competitors.get(acme.id, competitorId);
  const snapshotKey = await new Snapshots(blobs).save(acme.id, competitorId, {
    takenAt: "2025-05-01T00:00:00.000Z",
    homepage: "https://rival-labs.com/",
    carried: [],
    facts: {
      pricing: {
        url: "https://rival-labs.com/pricing",
        plans: [
          {
            name: "Starter",
            price: 0,
            currency: "USD",
            period: "month",
            perSeat: false,
            contactSales: false,
          },
          {
            name: "Pro",
            price: 12,
            currency: "USD",
            period: "month",
            perSeat: true,
            contactSales: false,
          },
        ],
      },
      hiring: {
        url: "https://rival-labs.com/careers",
        source: "page",
        jobs: [{ title: "Staff Data Engineer", team: "Platform", location: "Lisbon", url: null }],
      },
      content: {
        url: "https://rival-labs.com/blog",
        items: [
          {
            title: "Introducing live dashboards",
            url: "https://rival-labs.com/blog/live",
            date: "2025-04-28",
          },
        ],
      },
      messaging: {
        url: "https://rival-labs.com/",
        headline: "Reporting in minutes",
        claims: ["SOC 2"],
      },
    },
  });
  await table.update(tracked.pk, tracked.sk, { snapshotKey });
  await events.record(
    acme.id,
    [change("Pro price rose from $10 to $12", competitorId)],
    "2025-05-01T00:00:00.000Z",
  );
  const theirs = (await competitors.create(other.id, "rival-labs.com")).id;
  await events.record(
    other.id,
    [change("OTHER WORKSPACE EVENT", theirs)],
    "2025-05-02T00:00:00.000Z",
  );
});
afterAll(() => intel.close());
beforeEach(() => intel.fake.reset());

/** Inputs per module, a passage its query must retrieve, and the source holding it. */
const CASES: Record<string, { inputs: Json; passage: string; source: string }> = {
  persona: {
    inputs: { segment: "Heads of growth at B2B SaaS companies", role: "VP Growth" },
    passage: "reporting that takes days",
    source: CUSTOMERS,
  },
  competitor: {
    inputs: { domain: "rival-labs.com", segment: "heads of growth" },
    passage: "Rival Labs sells a cheaper reporting tool",
    source: RIVAL,
  },
  gtm: {
    inputs: { product: "Acme reporting for heads of growth", stage: "growth", timeline: "Q3" },
    passage: "reporting that takes days",
    source: CUSTOMERS,
  },
  journey: {
    inputs: { segment: "Heads of growth", product: "Team plan" },
    passage: "reporting that takes days",
    source: CUSTOMERS,
  },
  messaging: {
    inputs: { product: "Team plan", audiences: ["heads of growth", "analysts"] },
    passage: "The Team plan costs $99 per month",
    source: CUSTOMERS,
  },
  kpi: {
    inputs: { goal: "Grow Team plan revenue from heads of growth", motion: "product-led" },
    passage: "The Team plan costs $99 per month",
    source: CUSTOMERS,
  },
};

describe("each module", () => {
  it.each(ALL_MODULES.map((m) => [m.name, m] as const))(
    "%s: asks in its JSON schema, grounded in the brand and the right passages, and answers a saveable artifact",
    async (name, module) => {
      const { inputs, passage, source } = CASES[name] as (typeof CASES)[string];
      intel.fake.enqueue("chat", citing(module, passage));
      const res = await generate(acme, name, inputs);
      expect(res.status).toBe(200);

      const [request] = intel.fake.chatRequests();
      expect(request?.response_format).toEqual({
        type: "json_schema",
        json_schema: {
          name: `intel_${name}`,
          schema: strictJsonSchema(module.output),
          strict: true,
        },
      });
      expect(request?.max_completion_tokens).toBe(module.maxTokens);
      const prompt = intel.fake.prompt();
      expect(prompt).toContain("Name: Acme Analytics");
      expect(prompt).toContain("SOC 2 Type II certified");
      expect(prompt).toContain(passage);
      expect(prompt).not.toContain("Gold plan");
      expect(prompt).not.toContain("Other Corp");
      expect(prompt).toContain(`Request (${name}):`);

      const { output, citations, artifact } = res.body as {
        output: Json;
        citations: Array<{
          source_id: string;
          quote: string;
          char_start: number;
          char_end: number;
        }>;
        artifact: Json;
      };
      expect(res.body.module).toBe(name);
      expect(res.body.warnings).toEqual([]);
      expect(JSON.stringify(output)).toContain("example [1]");
      expect(citations).toEqual([
        {
          source_id: sourceIds.get(source),
          source_url_or_path: null,
          name: expect.any(String),
          quote: expect.any(String),
          char_start: expect.any(Number),
          char_end: expect.any(Number),
          page: null,
          heading_path: expect.any(Array),
          url: null,
        },
      ]);
      expect(source).toContain(citations[0]?.quote);
      // The citation's span is the quoted sentence in the source's text.
      expect(source.slice(citations[0]?.char_start, citations[0]?.char_end)).toBe(
        citations[0]?.quote,
      );
      expect(artifact).toEqual({
        module: name,
        title: expect.any(String),
        inputs,
        output,
        citations,
      });

      const saved = await call(acme, "POST", "/api/artifacts", artifact);
      expect(saved.status).toBe(201);
      const fetched = await call(acme, "GET", `/api/artifacts/${saved.body.id}`);
      expect(fetched.body).toEqual({
        ...artifact,
        id: saved.body.id,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
    },
  );
});

describe("grounding", () => {
  it("drops citations of passages the model was never given", async () => {
    const output = outputOf(named("persona"));
    output.name = "Grace [7]";
    intel.fake.enqueue("chat", { json: output });
    const res = await generate(acme, "persona", { segment: "Heads of growth" });
    expect(res.body.citations).toEqual([]);
    expect((res.body.output as Json).name).toBe("Grace");
  });

  it("keeps the brand profile and passages in data blocks, and the caller's inputs out of them", async () => {
    await generate(acme, "persona", { segment: "Heads of growth", notes: "Stress onboarding" });
    const [system, user] = (intel.fake.chatRequests()[0]?.messages ?? []).map((m) =>
      String(m.content),
    );
    expect(system).toContain("never as instructions");
    expect(system).toContain("Write a buyer persona");
    expect(user).toMatch(/<<<DATA [0-9a-f]{16} kind="brand_profile">>>/);
    expect(user?.slice(user.lastIndexOf("<<<END DATA"))).toContain("- notes: Stress onboarding");
  });
});

describe("the competitor module", () => {
  const competitorPrompt = async (inputs: Json) => {
    const res = await generate(acme, "competitor", inputs);
    expect(res.status).toBe(200);
    return intel.fake.prompt();
  };

  it("adds the tracked competitor found by its domain, however it is written, and its recent changes", async () => {
    const prompt = await competitorPrompt({ domain: "https://WWW.Rival-Labs.com/pricing" });
    expect(prompt).toContain('kind="competitor"');
    expect(prompt).toContain("Domain: rival-labs.com");
    expect(prompt).toMatch(/kind="competitor_change" type="pricing" severity="high"/);
    expect(prompt).toContain("Pro price rose from $10 to $12");
    expect(prompt).not.toContain("OTHER WORKSPACE EVENT");
  });

  it("adds what its site showed at the last check: plans and prices, open roles, posts, claims", async () => {
    const prompt = await competitorPrompt({ competitorId });
    const site = prompt.slice(prompt.indexOf('kind="competitor_site"'));
    expect(site).toMatch(/^kind="competitor_site" read="2025-05-01T00:00:00.000Z"/);
    expect(site).toContain("Homepage headline: Reporting in minutes");
    expect(site).toMatch(/- Pro: \$12[^\n]*seat/);
    expect(site).toContain("Open roles: 1");
    expect(site).toContain("- Staff Data Engineer, Platform, Lisbon");
    expect(site).toContain("- 2025-04-28: Introducing live dashboards");
  });

  it("finds the tracked competitor by id, and searches the knowledge base by its name", async () => {
    const prompt = await competitorPrompt({ competitorId });
    expect(prompt).toContain("Pro price rose from $10 to $12");
    expect(prompt).toContain("Rival Labs sells a cheaper reporting tool");
  });

  it("says when a domain is not tracked", async () => {
    const prompt = await competitorPrompt({ domain: "unknown-rival.io" });
    expect(prompt).toContain("this competitor is not tracked");
    expect(prompt).not.toContain("Pro price rose");
  });

  it.each([
    ["another workspace's", () => competitorId],
    ["an unknown", () => "comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R"],
    ["a malformed", () => "nope"],
  ])("answers 404 for %s competitor id", async (_, id) => {
    const res = await generate(other, "competitor", { competitorId: id() });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: { code: "not_found" } });
    expect(intel.fake.chatRequests()).toHaveLength(0);
  });

  it("answers 400 for a domain that is not one", async () => {
    const res = await generate(acme, "competitor", { domain: "not a domain" });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: "validation_failed" } });
  });
});

describe("structured answers", () => {
  it("asks once for a repair of an invalid answer, and answers the repaired one", async () => {
    const valid = outputOf(named("kpi"));
    intel.fake.enqueue("chat", { json: { northStar: "revenue" } }, { json: valid });
    const res = await generate(acme, "kpi", { goal: "Grow revenue" });
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual(valid);
    expect(intel.fake.chatRequests()).toHaveLength(2);
    expect(intel.fake.prompt(1)).toContain("does not match the required JSON schema");
  });

  it("answers 502 llm_error when the repair is invalid too", async () => {
    intel.fake.enqueue("chat", { json: { pillars: [] } }, { text: "not json" });
    const res = await generate(acme, "messaging", { product: "Team plan" });
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ error: { code: "llm_error" } });
    expect(intel.fake.chatRequests()).toHaveLength(2);
  });
});

describe("refusals", () => {
  it.each([
    ["a wrong type", "persona", { segment: 42 }, "segment"],
    ["an unknown field", "kpi", { goal: "Grow", budget: 10 }, "budget"],
    ["a stage too long to be one", "gtm", { product: "X", stage: "x".repeat(101) }, "stage"],
    ["a misspelt document input", "journey", { segmnt: "SMB" }, "segmnt"],
    ["neither domain nor competitorId", "competitor", { segment: "SMB" }, "domain"],
    ["an empty input", "messaging", { product: "   " }, "product"],
  ])("answers 400 for %s", async (_, module, inputs, path) => {
    const res = await generate(acme, module, inputs);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: "validation_failed" } });
    const issues = (res.body.error as { details: { issues: Array<{ path: string }> } }).details
      .issues;
    expect(issues.map((i) => i.path)).toContain(path);
    expect(intel.fake.chatRequests()).toHaveLength(0);
  });

  it("answers 404 for an unknown module, naming the valid ones", async () => {
    const res = await generate(acme, "swot", { segment: "x" });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      error: {
        code: "not_found",
        message: expect.stringContaining("persona, competitor, gtm, journey, messaging, kpi"),
        details: { modules: ["persona", "competitor", "gtm", "journey", "messaging", "kpi"] },
      },
    });
  });

  it("answers 405 to other methods on a module", async () => {
    const res = await call(acme, "GET", "/api/intel/persona");
    expect(res.status).toBe(405);
  });

  it("answers 409 brand_profile_missing without a brand profile, and calls no model", async () => {
    const res = await generate(unbranded, "persona", { segment: "Heads of growth" });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: { code: "brand_profile_missing" } });
    expect(intel.fake.chatRequests()).toHaveLength(0);
  });

  it("answers 503 llm_unavailable when no model is configured", async () => {
    const res = await generate(
      acme,
      "persona",
      { segment: "x" },
      intelApp({ llm: { apiKey: undefined } }),
    );
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: { code: "llm_unavailable" } });
  });

  it("answers 504 upstream_timeout when the model is too slow for the time budget", async () => {
    intel.fake.fallback("chat", { delayMs: 5_000 });
    const slow = intelApp({ llm: { timeoutMs: 300 } });
    const res = await generate(acme, "persona", { segment: "Heads of growth" }, slow);
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ error: { code: "upstream_timeout" } });
  });

  it("takes each generation from the daily model-call quota", async () => {
    const quotas = new Quotas(intel.aws.table, {
      crawl_pages: 1,
      upload_bytes: 1,
      model_calls: 1,
      competitor_checks: 1,
      exports: 1,
      reindexes: 1,
    });
    const limited = intelApp({ quotas });
    const ws = await intel.workspace("Limited");
    await intel.brands.put(ws.id, BRAND);
    intel.fake.fallback("chat", { json: outputOf(named("kpi")) });
    expect((await generate(ws, "kpi", { goal: "Grow" }, limited)).status).toBe(200);
    const second = await generate(ws, "kpi", { goal: "Grow" }, limited);
    expect(second.status).toBe(429);
    expect(second.body).toMatchObject({ error: { code: "quota_exceeded" } });
    expect(intel.fake.chatRequests()).toHaveLength(1);
  });
});

describe("the document's inputs", () => {
  const DOCUMENT = {
    segment: "Heads of growth at B2B SaaS companies",
    domain: "rival-labs.com",
    company: "Rival Labs",
    stage: "launch",
    notes: "Focus on the EU",
  };

  it.each(ALL_MODULES.map((m) => [m.name] as const))(
    "%s answers segment, domain, company, stage and notes with nothing else",
    async (name) => {
      const res = await generate(acme, name, DOCUMENT);
      expect(res.status).toBe(200);
      const prompt = intel.fake.prompt();
      for (const value of Object.values(DOCUMENT)) expect(prompt).toContain(value);
    },
  );

  it("fills a missing product from the brand profile and leaves a missing goal to the model", async () => {
    const ws = await intel.workspace("Filled");
    await intel.brands.put(ws.id, { ...BRAND, products: ["Acme Pulse"], audience: "RevOps leads" });
    expect((await generate(ws, "gtm", { stage: "launch" })).status).toBe(200);
    expect(intel.fake.prompt()).toContain(
      "- product: not given; take the brand profile's first product",
    );
    expect((await generate(ws, "gtm", {})).body.artifact).toMatchObject({
      title: "GTM plan: Acme Pulse",
    });
    expect((await generate(ws, "messaging", {})).status).toBe(200);
    expect(intel.fake.prompt()).toContain("- product: not given; take the brand profile's name");
    expect((await generate(ws, "persona", {})).status).toBe(200);
    expect(intel.fake.prompt()).toContain(
      "- segment: not given; take the brand profile's audience",
    );
    const kpi = await generate(ws, "kpi", { stage: "growth" });
    expect(kpi.status).toBe(200);
    expect(intel.fake.prompt()).toContain("- goal: not given; choose what fits best");
    expect((kpi.body.artifact as Json).inputs).toEqual({ stage: "growth" });
  });

  it("infers a missing segment from matching passages, and refuses it naming the field when nothing gives one", async () => {
    expect((await generate(acme, "journey", { product: "Team plan" })).status).toBe(200);
    expect(intel.fake.prompt()).toContain("- segment: not given");

    const bare = await intel.workspace("Bare");
    await intel.brands.put(bare.id, BRAND);
    intel.fake.reset();
    const res = await generate(bare, "persona", { stage: "launch" });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: {
        code: "validation_failed",
        message: expect.stringContaining("`segment` is needed"),
        details: { issues: [{ path: "segment", message: expect.stringContaining("audience") }] },
      },
    });
    expect(intel.fake.chatRequests()).toHaveLength(0);
  });

  it("shows suggested values as examples, not as an enumeration", async () => {
    const doc = openApiDocument(generateContract);
    const schemas = doc.components?.schemas as Record<string, { properties: Record<string, Json> }>;
    const kpi = schemas.KpiRequest?.properties ?? {};
    expect(kpi.stage).toMatchObject({ examples: expect.arrayContaining(["launch", "growth"]) });
    expect(kpi.stage?.enum).toBeUndefined();
    expect(kpi.motion).toMatchObject({ examples: ["product-led", "sales-led", "hybrid"] });
    expect(Object.keys(kpi)).toEqual(
      expect.arrayContaining(["segment", "domain", "company", "save"]),
    );
  });
});

describe("soft limits and saving in one step", () => {
  it("keeps an answer with fewer items than asked, warns, and the artifact still saves", async () => {
    const output = outputOf(named("messaging"));
    intel.fake.enqueue("chat", { json: { ...output, pillars: [] } });
    const res = await generate(acme, "messaging", { product: "Team plan" });
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(["pillars: 0 items, at least 3 asked"]);
    expect(intel.fake.chatRequests()).toHaveLength(1);
    expect((await call(acme, "POST", "/api/artifacts", res.body.artifact)).status).toBe(201);
  });

  it.each([
    ["supports only json_object", "json_object", ["json_schema", "json_object"]],
    // The first answer cannot know the schema; the repair carries it, and later prompts too.
    ["ignores response_format and wraps JSON in prose", "ignored", ["json_schema", undefined]],
  ] as const)("answers with a server that %s", async (_, support, formats) => {
    intel.fake.formats(support);
    const res = await generate(acme, "kpi", { goal: "Grow revenue" }, intelApp());
    expect(res.status).toBe(200);
    expect(intel.fake.chatRequests().map((r) => r.response_format?.type)).toEqual(formats);
  });

  it("stores the artifact with save: true and answers its id", async () => {
    const res = await generate(acme, "persona", { segment: "Heads of growth", save: true });
    expect(res.status).toBe(200);
    expect(res.body.artifactId).toMatch(/^art_/);
    const stored = await call(acme, "GET", `/api/artifacts/${res.body.artifactId}`);
    expect(stored.body).toMatchObject(res.body.artifact as Json);
    expect((stored.body.inputs as Json).save).toBeUndefined();
    expect((await call(other, "GET", `/api/artifacts/${res.body.artifactId}`)).status).toBe(404);

    const unsaved = await generate(acme, "persona", { segment: "Heads of growth" });
    expect(unsaved.body.artifactId).toBeUndefined();
  });
});
