import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { FakeOpenAI } from "../support/fake-openai.js";
import { shared } from "../support/shared.js";
import {
  type Client,
  isIsoUtc,
  issuesOf,
  misfits,
  type OpenApi,
  type Service,
  SLOW_TEST_MS,
  startService,
  until,
} from "./support.js";

/**
 * Marketing Intel as the interface document describes it: POST /api/intel/{module}, competitors
 * tracked by domain and checked against their live pages, and the change events they record.
 * The model is the fake OpenAI-compatible server, which answers a sample of the schema asked for.
 */

const MODULES = ["persona", "competitor", "gtm", "journey", "messaging", "kpi"] as const;
const SEVERITIES = ["critical", "high", "medium", "low"];

interface Competitor {
  id: string;
  domain: string;
  name: string;
  lastAnalyzedAt: string | null;
}

interface IntelEvent {
  id: string;
  competitorId: string;
  type: string;
  severity: string;
  title: string;
  aiBrief: string;
  isRead: boolean;
  isActioned: boolean;
  detectedAt: string;
}

let service: Service;
let api: Client;
let openapi: OpenApi;
let model: FakeOpenAI;
let site: CompetitorSite;

beforeAll(async () => {
  model = await FakeOpenAI.start();
  site = await startCompetitorSite();
  site.state.jobBoard = "html";
  service = await startService({
    OPENAI_API_KEY: "sk-test",
    OPENAI_BASE_URL: model.baseURL,
    LLM_MODEL: "fake-chat",
    // Pacing between a check's requests is the operator's choice; tests turn it off.
    CHECK_POLITENESS_MS: "0",
  });
  api = service.client;
  openapi = service.openapi;
});
afterAll(async () => {
  await service?.close();
  await site?.close();
  await model?.close();
});

const BRAND = {
  name: "Quokka Analytics",
  domain: "quokka-analytics.com",
  description: "Quokka Analytics gives B2B SaaS growth teams self-serve product analytics.",
  audience: "Heads of growth at B2B SaaS companies",
};

const INPUTS = {
  segment: "Heads of growth at B2B SaaS companies with 50-500 employees",
  domain: "rival-labs.com",
  company: "Rival Labs",
  stage: "growth",
};

describe("POST /api/intel/{module}", () => {
  it("answers without a brand profile as /openapi.json documents", async () => {
    const answer = await api.post("/api/intel/persona", { segment: INPUTS.segment });
    const described = openapi.response("POST", "/api/intel/{module}", answer.status).description;
    expect(answer.status).toBe(409);
    const code = /`([a-z_]+)`/.exec(described)?.[1];
    expect(answer.body).toMatchObject({ error: { code } });
    expect(
      misfits(openapi.responseSchema("POST", "/api/intel/{module}", 409), answer.body),
    ).toEqual([]);
  });

  it.each(MODULES)(
    "generates %s as structured output grounded in the brand profile, ready to save as an artifact",
    async (module) => {
      const brand = await api.put("/api/brand", BRAND);
      expect(brand.status).toBe(200);
      const asked = model.chatRequests().length;

      const answer = await api.post(`/api/intel/${module}`, INPUTS);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.module).toBe(module);
      expect(typeof answer.body.output).toBe("object");
      expect(answer.body.output).not.toBeNull();
      const documented = `${module[0]?.toUpperCase()}${module.slice(1)}Answer`;
      expect(misfits(openapi.validator({ $ref: `#/$defs/${documented}` }), answer.body)).toEqual(
        [],
      );
      // Grounded in the brand profile: the model was told about the brand.
      const prompts = model
        .chatRequests()
        .slice(asked)
        .map((request) => JSON.stringify(request.messages));
      expect(prompts.join("\n")).toContain(BRAND.description);

      const saved = await api.post("/api/artifacts", answer.body.artifact);
      expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    },
    SLOW_TEST_MS,
  );
});

describe("competitors", () => {
  const domainOf = () => new URL(site.origin).host;
  /**
   * The fixture site tracked, by the first test that needs it: the list before, and the answer.
   * Each step below is made once, by the first test that needs it, so that any test passes alone.
   */
  const tracked = shared(async () => {
    const listed = await api.get<{ competitors: Competitor[] }>("/api/intel/competitors");
    // The fixture site answers http on a port: /openapi.json says a URL gives the homepage.
    const created = await api.post<Competitor>("/api/intel/competitors", { domain: site.origin });
    return { listed, created };
  });
  const competitorId = async () => (await tracked()).created.body.id;
  const check = async () =>
    api.post<{ result: { ok: boolean; changed: boolean; summary: string } }>(
      `/api/intel/competitors/${await competitorId()}/check`,
    );
  /** The first check: the baseline later checks compare with. */
  const baseline = shared(check);
  /** A check after the starter plan's price changed on the site: it records pricing events. */
  const afterPriceChange = shared(async () => {
    await baseline();
    const starter = site.state.plans[0];
    if (starter) starter.price = "$12";
    return check();
  });
  const listedCompetitor = async () => {
    const id = await competitorId();
    return (
      await api.get<{ competitors: Competitor[] }>("/api/intel/competitors")
    ).body.competitors.find((c) => c.id === id);
  };
  const events = async (query = "") =>
    (await api.get<{ events: IntelEvent[] }>(`/api/intel/events${query}`)).body.events;

  it("tracks a competitor by domain: 201 with the created record", async () => {
    const { listed, created } = await tracked();
    expect(listed.status).toBe(200);
    expect(listed.body.competitors).toEqual([]);

    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.id).toMatch(/^comp_/);
    expect(created.body.domain).toBe(domainOf());
    expect(typeof created.body.name).toBe("string");
    expect(created.body.lastAnalyzedAt).toBeNull();
  });

  it("lists the competitor with name equal to its domain, not analyzed yet", async () => {
    const competitor = (await tracked()).created.body;
    const listed = await api.get<{ competitors: Competitor[] }>("/api/intel/competitors");
    expect(listed.status).toBe(200);
    expect(listed.body.competitors).toEqual([
      expect.objectContaining({
        id: competitor.id,
        domain: domainOf(),
        name: domainOf(),
        lastAnalyzedAt: null,
      }),
    ]);
    expect(
      misfits(openapi.responseSchema("GET", "/api/intel/competitors", 200), listed.body),
    ).toEqual([]);
  });

  it("answers 409 when the domain is already tracked", async () => {
    await tracked();
    for (const domain of [site.origin, domainOf()]) {
      const again = await api.post("/api/intel/competitors", { domain });
      expect(again.status, domain).toBe(409);
      expect(
        misfits(openapi.responseSchema("POST", "/api/intel/competitors", 409), again.body),
      ).toEqual([]);
    }
    const listed = await api.get<{ competitors: Competitor[] }>("/api/intel/competitors");
    expect(listed.body.competitors).toHaveLength(1);
  });

  it(
    "checks the competitor: 200 with result ok, changed and summary, and sets lastAnalyzedAt",
    async () => {
      const first = await baseline();
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(typeof first.body.result.ok).toBe("boolean");
      expect(typeof first.body.result.changed).toBe("boolean");
      expect(typeof first.body.result.summary).toBe("string");
      expect(first.body.result.ok).toBe(true);

      const analyzed = await listedCompetitor();
      expect(isIsoUtc(analyzed?.lastAnalyzedAt), `lastAnalyzedAt ${analyzed?.lastAnalyzedAt}`).toBe(
        true,
      );
    },
    SLOW_TEST_MS,
  );

  it(
    "reports changed after a price change on the site, and lists the pricing event",
    async () => {
      const competitor = (await tracked()).created.body;
      const changed = await afterPriceChange();
      expect(changed.status).toBe(200);
      expect(changed.body.result).toMatchObject({ ok: true, changed: true });
      expect(typeof changed.body.result.summary).toBe("string");

      const listed = await api.get<{ events: IntelEvent[] }>("/api/intel/events");
      expect(listed.status).toBe(200);
      expect(listed.body.events.length).toBeGreaterThan(0);
      for (const event of listed.body.events) {
        expect(event.id).toMatch(/^evt_/);
        expect(event.competitorId).toBe(competitor.id);
        expect(typeof event.type).toBe("string");
        expect(SEVERITIES).toContain(event.severity);
        expect(typeof event.title).toBe("string");
        expect(typeof event.aiBrief).toBe("string");
        expect(typeof event.isRead).toBe("boolean");
        expect(typeof event.isActioned).toBe("boolean");
        expect(isIsoUtc(event.detectedAt), `detectedAt ${event.detectedAt}`).toBe(true);
      }
      expect(listed.body.events.map((e) => e.type)).toContain("pricing");
      expect(misfits(openapi.responseSchema("GET", "/api/intel/events", 200), listed.body)).toEqual(
        [],
      );
      expect(
        misfits(
          openapi.responseSchema("POST", "/api/intel/competitors/{id}/check", 200),
          changed.body,
        ),
      ).toEqual([]);
    },
    SLOW_TEST_MS,
  );

  it(
    "lists events newest first up to the default limit /openapi.json documents",
    async () => {
      const documented = openapi.parameter("GET", "/api/intel/events", "limit").schema.default;
      expect(typeof documented, "the events' limit has a documented default").toBe("number");
      const count = Number(documented);
      await baseline();
      // More events than the default page holds: a check raises at most 5 of a kind and sums up
      // the rest in one more (docs/api.md), so new plans, jobs and posts are added at once, over
      // as few checks as that takes (each check reads every page of the site).
      let all: IntelEvent[] = [];
      for (let round = 0; all.length <= count; round++) {
        site.state.plans.push(
          ...Array.from({ length: 6 }, (_, i) => ({
            name: `Tier ${round + 1}.${i + 1}`,
            price: `$${100 + round * 10 + i}`,
            features: [`${i + 1} seats`],
          })),
        );
        site.state.jobs.push(
          ...Array.from({ length: 6 }, (_, i) => ({
            id: 1000 + round * 10 + i,
            title: `Solutions Engineer ${round + 1}.${i + 1}`,
            team: "Sales",
            location: "Remote",
          })),
        );
        site.state.posts.push(
          ...Array.from({ length: 6 }, (_, i) => ({
            slug: `launch-${round + 1}-${i + 1}`,
            title: `Launch notes ${round + 1}.${i + 1}`,
            date: `2025-04-${String(10 + round * 6 + i).padStart(2, "0")}`,
          })),
        );
        const changed = await check();
        expect(changed.body.result).toMatchObject({ ok: true, changed: true });
        const before = all.length;
        all = await until(
          "the new plans' events",
          () => events("?limit=100"),
          (listed) => listed.length > before,
        );
      }
      expect(await events()).toEqual(all.slice(0, count));
    },
    SLOW_TEST_MS,
  );

  it("filters events by each documented severity", async () => {
    await afterPriceChange();
    const all = await events("?limit=100");
    for (const severity of SEVERITIES) {
      const filtered = await api.get<{ events: IntelEvent[] }>(
        `/api/intel/events?severity=${severity}&limit=100`,
      );
      expect(filtered.status).toBe(200);
      expect(filtered.body.events.map((e) => e.id)).toEqual(
        all.filter((e) => e.severity === severity).map((e) => e.id),
      );
    }
    expect(all.some((e) => e.severity === "high")).toBe(true);
  });

  it("caps limit at 100, answering 101 as /openapi.json documents", async () => {
    const limit = openapi.parameter("GET", "/api/intel/events", "limit").schema;
    expect(limit.maximum).toBe(100);
    expect((await api.get("/api/intel/events?limit=100")).status).toBe(200);

    const over = await api.get("/api/intel/events?limit=101");
    // Over the documented maximum the parameter is not valid: the documented 400.
    expect(over.status).toBe(400);
    expect(misfits(openapi.responseSchema("GET", "/api/intel/events", 400), over.body)).toEqual([]);
    expect(JSON.stringify(issuesOf(over.body))).toContain("limit");
  });
});
