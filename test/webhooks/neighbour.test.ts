import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueWorkers } from "../../functions/manifest.js";
import { WEBHOOK_CAPACITY } from "../../lib/webhooks/capacity.js";
import { startHangingSites } from "../support/hanging-sites.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

const worker = queueWorkers.find((w) => w.name === "webhooks-worker");
/**
 * The narrowest worker the rule must hold in: one invocation more than a workspace may hold (the
 * manifest's is wider); the batch is the manifest's.
 */
const INVOCATIONS = WEBHOOK_CAPACITY.perWorkspace + 1;
/**
 * A hang guard, not a speed limit: below the worker's timeout, so that no invocation of A's can
 * have ended by the local runtime's timeout before B's delivery arrives.
 */
const GUARD_MS = 25_000;

/**
 * Workspace A registers an endpoint that accepts connections and never answers and sends it 40
 * test events, and as many more hung endpoints as fill its share of the worker, one test event
 * each; workspace B then sends one test event to a healthy endpoint. An attempt waits ten minutes
 * for an answer here, so only the test ends A's attempts: B's delivery arriving at all, while
 * every connection A opened is still open, proves it did not wait for A's.
 */
describe("a workspace whose webhook endpoint hangs, and its neighbour", () => {
  let rt: TestRuntime;
  let hanging: Awaited<ReturnType<typeof startHangingSites>>;
  let receiver: Receiver;

  beforeAll(async () => {
    Object.assign(process.env, {
      ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_CACHE_SECONDS: "0",
      WEBHOOK_TIMEOUT_MS: "600000",
    });
    [hanging, receiver] = await Promise.all([
      startHangingSites(WEBHOOK_CAPACITY.perWorkspace + 1),
      startReceiver(),
    ]);
    rt = await startTestRuntime({ workerConcurrency: { "webhooks-worker": INVOCATIONS } });
  });

  afterAll(async () => {
    // Ends A's attempts (their endpoints hang up), lets the deliveries under way end, then stops.
    await hanging?.close();
    await rt?.runtime.queues.settled();
    await rt?.close();
    await receiver?.close();
  });

  it("runs the manifest's batch on a worker of A's share plus one", () => {
    expect(worker?.batchSize).toBe(WEBHOOK_CAPACITY.batchSize);
    expect(INVOCATIONS).toBeLessThanOrEqual(WEBHOOK_CAPACITY.maxConcurrency);
  });

  it("delivers B's event while A's endpoints hang, each with one attempt at most", async () => {
    const register = async (url: string, key?: string) => {
      const res = await rt.call("/api/webhooks", {
        method: "POST",
        json: { url, events: ["source.indexed"] },
        ...(key ? { key } : {}),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const test = async (id: string, key?: string) => {
      const res = await rt.call(`/api/webhooks/${id}/test`, {
        method: "POST",
        ...(key ? { key } : {}),
      });
      expect(res.status).toBe(202);
    };
    const [first, ...others] = await Promise.all(hanging.origins.map((url) => register(url)));
    if (!first) throw new Error("no hung endpoint");
    const b = await register(receiver.url, rt.otherKey);

    const started = Date.now();
    for (let i = 0; i < 40; i++) await test(first);
    for (const id of others) await test(id);
    await test(b, rt.otherKey);
    await receiver.waitFor(1, started + GUARD_MS - Date.now());

    // B's event arrived while no attempt of A's had ended ...
    expect(hanging.state.closedByClient).toBe(0);
    expect(hanging.openNow()).toBe(hanging.state.opened);
    // ... its 40 events having opened one connection to its endpoint (the others wait their turn),
    expect(hanging.openedBySite[0]).toBe(1);
    // ... and A holding no more attempts at once than its share of the worker.
    expect(hanging.state.mostOpen).toBeLessThanOrEqual(WEBHOOK_CAPACITY.perWorkspace);
    const log = (await (
      await rt.call(`/api/webhooks/${b}/deliveries`, { key: rt.otherKey })
    ).json()) as {
      deliveries: Array<{ result: string }>;
    };
    expect(log.deliveries.map((d) => d.result)).toEqual(["delivered"]);
  });
});
