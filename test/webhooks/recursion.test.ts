import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { queueWorkers } from "../../functions/manifest.js";
import { MAX_RECURSIVE_INVOCATIONS } from "../../infra/local/lineage.js";
import { drainOnClock } from "../support/queue-clock.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { type Site, startSite } from "../support/sites.js";

/**
 * A webhook retried for hours is a long chain of the webhooks worker's own messages: each attempt
 * queues the next, and a wait longer than SQS's 15-minute delay goes round the queue every 15
 * minutes. Lambda stops such a chain after 16 invocations unless the function allows recursive
 * loops; the manifest declares it for the webhooks worker, whose own bound is its retry schedule.
 *
 * Through the whole local runtime, with the default schedule (5 s, 5 min, 30 min, 2 h, 5 h, 8 h,
 * 8 h): the clock is moved by hand to each delayed message's time (Date only; the rest runs as it
 * does), so a day of retries takes a second or two.
 */

const HOUR = 3600_000;
const worker = queueWorkers.find((w) => w.name === "webhooks-worker");

let rt: TestRuntime;
let site: Site;
/** Answers 500 until `failUntil` (epoch ms, moved clock), then 200; records each attempt. */
let failUntil = 0;
const attempts: Array<{ at: number; status: number }> = [];

beforeAll(async () => {
  // The receiver is on loopback, reachable only with this development switch.
  process.env.ALLOW_PRIVATE_URLS = "true";
  process.env.WEBHOOK_CACHE_SECONDS = "0";
  delete process.env.WEBHOOK_RETRY_SECONDS;
  site = await startSite({
    "/hook": (req, res) => {
      req.resume();
      const status = Date.now() < failUntil ? 500 : 200;
      attempts.push({ at: Date.now(), status });
      res.writeHead(status).end();
    },
  });
  rt = await startTestRuntime();
});
afterAll(async () => {
  await rt?.close();
  await site?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

/**
 * Sends a test event to a new endpoint that fails for `outageMs` from its first attempt, and runs
 * the queues until nothing is left, moving the clock to each delayed message's time.
 */
async function deliverThroughOutage(outageMs: number) {
  vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
  attempts.length = 0;
  failUntil = Date.now() + outageMs;
  const created = await rt.call("/api/webhooks", {
    method: "POST",
    json: { url: `${site.origin}/hook`, events: ["source.indexed"] },
  });
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: string };
  const dead = rt.runtime.queues.deadLetters("webhooks").length;
  const before = rt.runtime.queues.recursion("webhooks-worker");
  expect((await rt.call(`/api/webhooks/${id}/test`, { method: "POST" })).status).toBe(202);
  await drainOnClock(rt.runtime.queues);
  const log = (await (await rt.call(`/api/webhooks/${id}/deliveries?limit=20`)).json()) as {
    deliveries: Array<{ attempt: number; result: string; statusCode: number | null }>;
  };
  const after = rt.runtime.queues.recursion("webhooks-worker");
  return {
    results: log.deliveries.map((a) => [a.attempt, a.result, a.statusCode]).reverse(),
    hoursAfterFirst: attempts.map((a) => (a.at - (attempts[0]?.at ?? 0)) / HOUR),
    deadLetters: rt.runtime.queues.deadLetters("webhooks").length - dead,
    dropped: after.dropped - before.dropped,
    longestChain: after.longestChain,
  };
}

describe("a webhook endpoint down for hours, through the local runtime", () => {
  it("gets the event when it is back six hours later: a chain past 16 hops, allowed", async () => {
    expect(worker?.recursion?.allow).toBe(true);
    const run = await deliverThroughOutage(6 * HOUR);
    expect(run.results).toEqual([
      [1, "retrying", 500],
      [2, "retrying", 500],
      [3, "retrying", 500],
      [4, "retrying", 500],
      [5, "retrying", 500],
      [6, "delivered", 200],
    ]);
    // The sixth attempt comes 5 s + 5 min + 30 min + 2 h + 5 h after the first.
    expect(run.hoursAfterFirst.at(-1)).toBeGreaterThan(7.5);
    expect(run.hoursAfterFirst.at(-1)).toBeLessThan(7.7);
    // 1 + 1 + 1 + 2 + 8 + 20 invocations of the worker in one chain, none dropped.
    expect(run.longestChain).toBeGreaterThanOrEqual(33);
    expect(run).toMatchObject({ dropped: 0, deadLetters: 0 });
  });

  it("stops after the schedule's last attempt, about a day on: the loop's own bound", async () => {
    const run = await deliverThroughOutage(Number.POSITIVE_INFINITY);
    expect(run.results).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7].map((n) => [n, "retrying", 500]),
      [8, "dead_lettered", 500],
    ]);
    expect(run.hoursAfterFirst.at(-1)).toBeGreaterThan(23.5);
    expect(run.hoursAfterFirst.at(-1)).toBeLessThan(23.7);
    // The last attempt's message fails its receives and is dead-lettered; nothing was dropped.
    expect(run).toMatchObject({ dropped: 0, deadLetters: 1 });
  });

  it("is dropped at its 17th hop when the manifest entry declares no recursion", async () => {
    if (!worker) throw new Error("no webhooks-worker in the manifest");
    const declared = worker.recursion;
    delete worker.recursion;
    try {
      const run = await deliverThroughOutage(6 * HOUR);
      // Attempt 5 was the 13th invocation; the wait for the sixth went round the queue until
      // the message that would have invoked the worker a 17th time was dead-lettered instead.
      expect(run.results).toEqual([1, 2, 3, 4, 5].map((n) => [n, "retrying", 500]));
      expect(run).toMatchObject({ dropped: 1, deadLetters: 1 });
      expect(MAX_RECURSIVE_INVOCATIONS).toBe(16);
    } finally {
      worker.recursion = declared;
    }
  });
});
