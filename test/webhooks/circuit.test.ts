import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { WorkspaceSlots } from "../../lib/limits/workspace-slots.js";
import { type Queue, WebhookMessage } from "../../lib/store/queue.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { WEBHOOK_CAPACITY } from "../../lib/webhooks/capacity.js";
import { EndpointCircuits } from "../../lib/webhooks/circuit.js";
import { WebhookDeliverer } from "../../lib/webhooks/delivery.js";
import { DeliveryGate, WEBHOOK_SLOT_PREFIX } from "../../lib/webhooks/delivery-gate.js";
import { firstDelivery, newEvent } from "../../lib/webhooks/emitter.js";
import { WebhookEndpoints } from "../../lib/webhooks/endpoints.js";
import { startAws, type TestAws } from "../support/aws.js";
import { type Site, startSite } from "../support/sites.js";

/**
 * Each endpoint's gate against dynalite and a real endpoint on 127.0.0.1: the circuit breaker
 * under a clock moved by hand, and the lease under two workers racing for one endpoint. Deferred
 * and retried deliveries go to a queue nothing consumes, where the test reads them.
 */

const { threshold, coolOffMs } = WEBHOOK_CAPACITY.breaker;

let aws: TestAws;
let endpoints: WebhookEndpoints;
let circuits: EndpointCircuits;
let parking: Queue<WebhookMessage>;
let site: Site;
/** The endpoint's next answers, in turn (200 once they run out). */
const statuses: number[] = [];
/** Requests the endpoint holds unanswered until the test lets them go. */
let holding = false;
const held: Array<() => void> = [];
let clock = Date.now();

/** The messages of one event sent back to the queue (deferred, or its next attempt). */
const queued = (eventId: string) =>
  aws.queues
    .pending("webhooks-parking")
    .map((body) => WebhookMessage.parse(JSON.parse(body)))
    .filter((m) => m.eventId === eventId);

/** Resolves once the endpoint has received `count` requests since `before`. */
async function arrived(before: number, count: number) {
  while (site.requests.length - before < count) await new Promise((r) => setTimeout(r, 10));
}

/** One worker: its own gate and deliverer over the shared table, on the test's clock. */
const workerOf = (slots = WEBHOOK_CAPACITY.perWorkspace) =>
  new WebhookDeliverer({
    endpoints,
    queue: parking,
    poster: new SafeFetcher({ allowPrivate: true, timeoutMs: 5000 }),
    retrySeconds: [60, 60, 60, 60, 60, 60, 60, 60, 60],
    gate: new DeliveryGate({
      circuits,
      slots: new WorkspaceSlots(aws.table, WEBHOOK_SLOT_PREFIX, slots),
      queue: parking,
      attemptTimeoutMs: 5000,
      now: () => clock,
    }),
  });

const oneEvent = (workspaceId: string, endpointId: string) =>
  firstDelivery(workspaceId, endpointId, newEvent("webhook.test", {}));
const firstReceive = { receiveCount: 1, maxReceiveCount: 3 };

beforeAll(async () => {
  aws = await startAws();
  endpoints = new WebhookEndpoints(aws.table, aws.dataKeys);
  circuits = new EndpointCircuits(aws.table);
  parking = aws.queue<WebhookMessage>("webhooks-parking");
  site = await startSite({
    "/hook": (req, res) => {
      req.resume();
      const answer = () => {
        const status = statuses.shift() ?? 200;
        res.writeHead(status).end(`answered ${status}`);
      };
      if (holding) held.push(answer);
      else answer();
    },
  });
});
afterAll(async () => {
  await site.close();
  await aws.close();
});
beforeEach(() => {
  statuses.length = 0;
});

describe("an endpoint's circuit breaker", () => {
  it(`opens after ${threshold} failures in a row, then defers without connecting until its cool-off ends`, async () => {
    const hook = await endpoints.create("ws_breaker", {
      url: `${site.origin}/hook`,
      events: ["source.indexed"],
    });
    const worker = workerOf();
    const circuitOf = async () => (await circuits.view("ws_breaker", [hook.id], clock))(hook.id);
    statuses.push(...Array.from({ length: threshold }, () => 500));
    const before = site.requests.length;
    for (let i = 1; i < threshold; i++) {
      expect(await worker.handle(oneEvent("ws_breaker", hook.id), firstReceive)).toBe("retrying");
    }
    // One failure short of the threshold, the circuit is still closed.
    expect(await circuitOf()).toEqual({
      state: "closed",
      consecutiveFailures: threshold - 1,
      openUntil: null,
    });
    expect(await worker.handle(oneEvent("ws_breaker", hook.id), firstReceive)).toBe("retrying");
    const openUntil = clock + coolOffMs;
    expect(await circuitOf()).toEqual({
      state: "open",
      consecutiveFailures: threshold,
      openUntil: new Date(openUntil).toISOString(),
    });
    expect(site.requests.length - before).toBe(threshold);

    // While open: deferred until the cool-off ends, not connected, not an attempt.
    const waiting = oneEvent("ws_breaker", hook.id);
    clock += coolOffMs - 1000;
    expect(await worker.handle(waiting, firstReceive)).toBe("deferred");
    expect(site.requests.length - before).toBe(threshold);
    expect(queued(waiting.eventId)).toMatchObject([
      { attempt: 1, deferrals: 1, notBefore: openUntil },
    ]);
    const log = await endpoints.deliveries("ws_breaker", hook.id, 20);
    expect(log.items.filter((a) => a.eventId === waiting.eventId)).toEqual([]);

    // Half open once the cool-off passed: one probe connects; its failure reopens for twice as long.
    clock = openUntil;
    expect((await circuitOf()).state).toBe("half_open");
    statuses.push(503);
    expect(await worker.handle(oneEvent("ws_breaker", hook.id), firstReceive)).toBe("retrying");
    expect(site.requests.length - before).toBe(threshold + 1);
    expect(await circuitOf()).toEqual({
      state: "open",
      consecutiveFailures: threshold + 1,
      openUntil: new Date(clock + 2 * coolOffMs).toISOString(),
    });

    // The next probe is answered: the circuit closes and deliveries go through again.
    clock += 2 * coolOffMs;
    expect(await worker.handle(oneEvent("ws_breaker", hook.id), firstReceive)).toBe("delivered");
    expect(await circuitOf()).toEqual({ state: "closed", consecutiveFailures: 0, openUntil: null });
    expect(await worker.handle(oneEvent("ws_breaker", hook.id), firstReceive)).toBe("delivered");
    expect(site.requests.length - before).toBe(threshold + 3);
  });

  it("gives a deferred delivery up to the queue's retries once it was put back too often", async () => {
    const hook = await endpoints.create("ws_blocked", {
      url: `${site.origin}/hook`,
      events: ["source.indexed"],
    });
    statuses.push(...Array.from({ length: threshold }, () => 500));
    const worker = workerOf();
    for (let i = 0; i < threshold; i++)
      await worker.handle(oneEvent("ws_blocked", hook.id), firstReceive);
    const message = {
      ...oneEvent("ws_blocked", hook.id),
      deferrals: WEBHOOK_CAPACITY.maxDeferrals,
    };
    await expect(worker.handle(message, firstReceive)).rejects.toMatchObject({
      name: "DeliveryBlocked",
    });
    expect(queued(message.eventId)).toEqual([]);
  });
});

describe("an endpoint's lease", () => {
  it("lets one of two workers racing for one endpoint attempt; the other defers without connecting", async () => {
    const hook = await endpoints.create("ws_race", {
      url: `${site.origin}/hook`,
      events: ["source.indexed"],
    });
    const [one, two] = [workerOf(), workerOf()];
    const before = site.requests.length;
    holding = true;
    const events = [oneEvent("ws_race", hook.id), oneEvent("ws_race", hook.id)] as const;
    try {
      const racing = [one.handle(events[0], firstReceive), two.handle(events[1], firstReceive)];
      // The loser is deferred while the winner's request is still held by the endpoint.
      expect(await Promise.race(racing)).toBe("deferred");
      await arrived(before, 1);
      holding = false;
      for (const answer of held.splice(0)) answer();
      expect((await Promise.all(racing)).sort()).toEqual(["deferred", "delivered"]);
    } finally {
      holding = false;
    }
    expect(site.requests.length - before).toBe(1);
    expect(events.flatMap((e) => queued(e.eventId))).toMatchObject([
      { endpointId: hook.id, attempt: 1, deferrals: 1 },
    ]);
  });

  it("is granted to exactly one of many concurrent takers, and again once given back", async () => {
    const until = clock + 60_000;
    const gates = await Promise.all(
      Array.from({ length: 12 }, () => circuits.acquire("ws_many", "wh_one", clock, until)),
    );
    const held = gates.flatMap((g) => (g.kind === "held" ? [g.lease] : []));
    expect(held).toHaveLength(1);
    expect(gates.filter((g) => g.kind === "busy")).toHaveLength(11);
    expect(gates.find((g) => g.kind === "busy")).toEqual({ kind: "busy", until });
    const [lease] = held;
    if (!lease) throw new Error("no lease");
    await circuits.release(lease);
    expect((await circuits.acquire("ws_many", "wh_one", clock, until)).kind).toBe("held");
    // A lease never given back (its worker died) ends by itself.
    expect((await circuits.acquire("ws_many", "wh_one", until + 1, until + 60_000)).kind).toBe(
      "held",
    );
  });

  it("defers another endpoint's delivery while its workspace holds all its slots", async () => {
    const [busy, other] = await Promise.all(
      ["busy", "other"].map((name) =>
        endpoints.create("ws_share", {
          url: `${site.origin}/hook?${name}`,
          events: ["source.indexed"],
        }),
      ),
    );
    if (!busy || !other) throw new Error("no endpoints");
    const worker = workerOf(1);
    const before = site.requests.length;
    holding = true;
    try {
      const first = worker.handle(oneEvent("ws_share", busy.id), firstReceive);
      await arrived(before, 1);
      expect(await worker.handle(oneEvent("ws_share", other.id), firstReceive)).toBe("deferred");
      // The other endpoint's lease was given back: only the workspace's share stood in the way.
      const gate = await circuits.acquire("ws_share", other.id, clock, clock + 1000);
      expect(gate.kind).toBe("held");
      if (gate.kind === "held") await circuits.release(gate.lease);
      holding = false;
      for (const answer of held.splice(0)) answer();
      expect(await first).toBe("delivered");
    } finally {
      holding = false;
    }
    expect(site.requests.length - before).toBe(1);
  });
});
