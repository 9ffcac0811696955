import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueWorkers } from "../../functions/manifest.js";
import { CHECK_CAPACITY } from "../../lib/competitors/capacity.js";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { startHangingSites } from "../support/hanging-sites.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

const worker = queueWorkers.find((w) => w.name === "competitor-check-worker");
/**
 * The narrowest worker the rule must hold in: one invocation more than a workspace may hold. The
 * manifest's is far wider (CHECK_CAPACITY.maxConcurrency); the batch is the manifest's.
 */
const INVOCATIONS = CHECK_CAPACITY.workspaceSlots + 1;

interface Listed {
  competitors: Array<{ id: string; domain: string; lastAnalyzedAt: string | null }>;
}

/**
 * Workspace A tracks ten sites that never answer and checks them all; workspace B then queues one
 * check of a healthy site. A's checks can end only when the test ends them (their budget and
 * request timeout are ten minutes), so B's check finishing at all proves it did not wait for A's.
 */
describe("a workspace whose competitors hang, and its neighbour", () => {
  let rt: TestRuntime;
  let hanging: Awaited<ReturnType<typeof startHangingSites>>;
  let healthy: CompetitorSite;

  beforeAll(async () => {
    Object.assign(process.env, {
      ALLOW_PRIVATE_URLS: "true",
      CHECK_POLITENESS_MS: "0",
      CHECK_BUDGET_MS: "600000",
      CHECK_REQUEST_TIMEOUT_MS: "600000",
    });
    [hanging, healthy] = await Promise.all([startHangingSites(10), startCompetitorSite()]);
    healthy.state.jobBoard = "html";
    rt = await startTestRuntime({
      workerConcurrency: { "competitor-check-worker": INVOCATIONS },
    });
  });

  afterAll(async () => {
    // Ends A's checks (their sites hang up), lets the deliveries under way finish, then stops.
    await hanging?.close();
    await rt?.runtime.queues.settled();
    await rt?.close();
    await healthy?.close();
  });

  it("runs the manifest's batch on a worker of its slots plus one", () => {
    expect(worker?.batchSize).toBe(CHECK_CAPACITY.batchSize);
    expect(INVOCATIONS).toBeLessThan(CHECK_CAPACITY.maxConcurrency);
  });

  it("runs B's check while A's backlog hangs, A holding no more than its slots", async () => {
    for (const origin of hanging.origins) {
      const added = await rt.call("/api/intel/competitors", {
        method: "POST",
        json: { domain: origin },
      });
      expect(added.status).toBe(201);
    }
    const all = await rt.call("/api/intel/competitors/check-all", { method: "POST" });
    expect(await all.json()).toEqual({ queued: 10 });

    const asB = { key: rt.otherKey };
    const added = await rt.call("/api/intel/competitors", {
      method: "POST",
      json: { domain: healthy.origin },
      ...asB,
    });
    const { id } = (await added.json()) as { id: string };
    const queued = await rt.call("/api/intel/competitors/check-all", { method: "POST", ...asB });
    expect(await queued.json()).toEqual({ queued: 1 });

    // The wall bound is a hang guard only: without the cap, B's check never starts before A's end.
    const checked = async () => {
      const list = (await (await rt.call("/api/intel/competitors", asB)).json()) as Listed;
      return list.competitors.find((c) => c.id === id)?.lastAnalyzedAt ?? null;
    };
    const until = Date.now() + 25_000;
    while (!(await checked()) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await checked()).not.toBeNull();

    // B finished while every check of A that started still waits on its site ...
    expect(hanging.state.closedByClient).toBe(0);
    expect(hanging.openNow()).toBe(hanging.state.opened);
    const listA = (await (await rt.call("/api/intel/competitors")).json()) as Listed;
    expect(listA.competitors.filter((c) => c.lastAnalyzedAt !== null)).toEqual([]);
    // ... and A never held more of the worker than its slots: the rest of its checks wait.
    expect(hanging.state.opened).toBeGreaterThan(0);
    expect(hanging.state.mostOpen).toBeLessThanOrEqual(CHECK_CAPACITY.workspaceSlots);
  });
});
