import { describe, expect, it } from "vitest";
import type { WebhookMessage } from "../../lib/store/queue.js";
import { deliveryTurns } from "../../lib/webhooks/delivery-turns.js";

/** A record of endpoint `endpointId`, numbered `n` so the test can tell records apart. */
const record = (endpointId: string, n: number): WebhookMessage => ({
  kind: "webhook-delivery",
  workspaceId: "ws_turns",
  endpointId,
  eventId: `msg_${n}`,
  type: "webhook.test",
  occurredAt: new Date(0).toISOString(),
  data: {},
  attempt: 1,
});
const delivery = { receiveCount: 1, maxReceiveCount: 3 };

/**
 * A handler whose attempts end only when the test says how: it records which records were
 * allowed to connect, in the order they started.
 */
function scripted() {
  const started: Array<{ n: string; mayAttempt: boolean }> = [];
  const endings = new Map<string, (outcome: string) => void>();
  const handle = (message: WebhookMessage, _: unknown, mayAttempt: boolean) => {
    started.push({ n: message.eventId, mayAttempt });
    if (!mayAttempt) return Promise.resolve("deferred");
    return new Promise<string>((resolve) => endings.set(message.eventId, resolve));
  };
  const end = async (eventId: string, outcome: string) => {
    while (!endings.has(eventId)) await new Promise((r) => setTimeout(r, 1));
    endings.get(eventId)?.(outcome);
  };
  return { started, handle, end };
}

describe("one invocation's webhook records", () => {
  it("run at once across endpoints, one after another within an endpoint", async () => {
    const { started, handle, end } = scripted();
    const deliver = deliveryTurns(handle, 1000, Number.POSITIVE_INFINITY);
    const outcomes = Promise.all([
      deliver(record("wh_a", 1), delivery),
      deliver(record("wh_a", 2), delivery),
      deliver(record("wh_b", 3), delivery),
    ]);
    await end("msg_3", "delivered");
    // wh_b's record did not wait for wh_a's first, still running; wh_a's second did.
    expect(started.map((s) => s.n)).toEqual(["msg_1", "msg_3"]);
    await end("msg_1", "delivered");
    await end("msg_2", "delivered");
    expect(await outcomes).toEqual(["delivered", "delivered", "delivered"]);
    expect(started.every((s) => s.mayAttempt)).toBe(true);
  });

  it("defers the endpoint's later records without connecting once one failed", async () => {
    const { started, handle, end } = scripted();
    const deliver = deliveryTurns(handle, 1000, Number.POSITIVE_INFINITY);
    const outcomes = Promise.all([1, 2, 3].map((n) => deliver(record("wh_a", n), delivery)));
    await end("msg_1", "retrying");
    expect(await outcomes).toEqual(["retrying", "deferred", "deferred"]);
    expect(started).toEqual([
      { n: "msg_1", mayAttempt: true },
      { n: "msg_2", mayAttempt: false },
      { n: "msg_3", mayAttempt: false },
    ]);
  });

  it("defers a record whose turn comes too late to finish an attempt before the deadline", async () => {
    const { started, handle, end } = scripted();
    let clock = 0;
    const deliver = deliveryTurns(handle, 1000, 1500, () => clock);
    const outcomes = Promise.all([1, 2].map((n) => deliver(record("wh_a", n), delivery)));
    // The first took until 600: a second attempt of 1000 would end at 1600, past 1500.
    clock = 600;
    await end("msg_1", "delivered");
    expect(await outcomes).toEqual(["delivered", "deferred"]);
    expect(started.map((s) => s.mayAttempt)).toEqual([true, false]);
  });
});
