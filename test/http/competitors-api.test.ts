import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { FakeOpenAI } from "../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

let rt: TestRuntime;
let site: CompetitorSite;
let model: FakeOpenAI;

beforeAll(async () => {
  // The fixture site is on loopback; checks may reach it only with this development switch.
  process.env.ALLOW_PRIVATE_URLS = "true";
  process.env.CHECK_POLITENESS_MS = "0";
  // With a model configured, both the API and the check worker have it write the briefs.
  model = await FakeOpenAI.start();
  model.fallback("chat", { text: "Model brief: what it means for us." });
  Object.assign(process.env, { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: model.baseURL });
  site = await startCompetitorSite();
  site.state.jobBoard = "html";
  rt = await startTestRuntime();
});
afterAll(async () => {
  await rt.close();
  await site.close();
  await model.close();
});

interface Event {
  type: string;
  severity: string;
  competitorId: string;
  aiBrief: string;
}

describe("competitor monitoring through the local runtime", () => {
  it("tracks a competitor, records a baseline, then one event per real change", async () => {
    const added = await rt.call("/api/intel/competitors", {
      method: "POST",
      json: { domain: site.origin },
    });
    expect(added.status).toBe(201);
    const competitor = (await added.json()) as { id: string; lastAnalyzedAt: string | null };
    expect(competitor.lastAnalyzedAt).toBeNull();

    const check = () =>
      rt.call(`/api/intel/competitors/${competitor.id}/check`, { method: "POST" });
    const baseline = (await (await check()).json()) as {
      result: { ok: boolean; changed: boolean };
    };
    expect(baseline.result).toMatchObject({ ok: true, changed: false });

    const starter = site.state.plans[0];
    if (starter) starter.price = "$12";
    const changed = (await (await check()).json()) as { result: { ok: boolean; changed: boolean } };
    expect(changed.result).toMatchObject({ ok: true, changed: true });

    const events = (await (await rt.call("/api/intel/events")).json()) as { events: Event[] };
    expect(events.events).toEqual([
      expect.objectContaining({
        type: "pricing",
        severity: "high",
        competitorId: competitor.id,
        aiBrief: "Model brief: what it means for us.",
      }),
    ]);
    expect(model.prompt()).toContain("price_increase");
    const other = (await (await rt.call("/api/intel/events", { key: rt.otherKey })).json()) as {
      events: Event[];
    };
    expect(other.events).toEqual([]);
  });

  it("queues the caller's competitors for checking, and the worker runs them", async () => {
    site.state.headline = "A headline the worker sees";
    const res = await rt.call("/api/intel/competitors/check-all", { method: "POST" });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ queued: 1 });
    await rt.runtime.queues.idle();
    expect(rt.runtime.queues.deadLetters("checks")).toEqual([]);
    const events = (await (await rt.call("/api/intel/events?type=messaging")).json()) as {
      events: Event[];
    };
    expect(events.events).toEqual([
      expect.objectContaining({ aiBrief: "Model brief: what it means for us." }),
    ]);
  });
});
