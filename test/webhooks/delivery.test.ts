import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { newId } from "../../lib/ids.js";
import { type Queue, recordHandler, WebhookMessage } from "../../lib/store/queue.js";
import { wsKey } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { DeliveryAbandoned, WebhookDeliverer } from "../../lib/webhooks/delivery.js";
import { deliveryGate } from "../../lib/webhooks/delivery-gate.js";
import { WebhookEmitter } from "../../lib/webhooks/emitter.js";
import { WebhookEndpoints } from "../../lib/webhooks/endpoints.js";
import { startAws, type TestAws } from "../support/aws.js";
import { loggedWhile } from "../support/captured-logs.js";
import { payload, type Receiver, startReceiver, verify } from "../support/webhook-receiver.js";
import { consumeWebhooks } from "./consume.js";

/**
 * Deliveries through the real queue path: the local SQS endpoint and driver (3 receives before
 * the dead-letter list, 20 ms between them), dynalite, the safe fetcher and a receiver on
 * 127.0.0.1 that checks every signature as the receiver of docs/webhooks.md does.
 */

let aws: TestAws;
let receiver: Receiver;
let endpoints: WebhookEndpoints;
let queue: Queue<WebhookMessage>;
/** The worker the queue feeds; each test sets the schedule and fetcher it needs. */
let deliverer: WebhookDeliverer;

const open = new SafeFetcher({ allowPrivate: true, timeoutMs: 5000 });
const delivererWith = (retrySeconds: number[], poster = open) =>
  new WebhookDeliverer({
    endpoints,
    queue,
    poster,
    retrySeconds,
    gate: deliveryGate(aws.table, queue),
  });

beforeAll(async () => {
  aws = await startAws();
  receiver = await startReceiver();
  endpoints = new WebhookEndpoints(aws.table, aws.dataKeys);
  queue = aws.queue<WebhookMessage>("webhooks");
  consumeWebhooks(aws, () => deliverer);
});
afterAll(async () => {
  await aws.close();
  await receiver.close();
});
beforeEach(() => {
  receiver.received.length = 0;
});

const emitterFor = () => new WebhookEmitter({ endpoints, queue, cacheSeconds: 0 });

describe("webhook deliveries", () => {
  it("signs each delivery as Standard Webhooks says, and sends only subscribed events", async () => {
    deliverer = delivererWith([1]);
    const hook = await endpoints.create("ws_sign", {
      url: receiver.url,
      events: ["source.indexed", "source.failed"],
    });
    await endpoints.create("ws_sign", { url: receiver.url, events: ["crawl.completed"] });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    await emitterFor().emit("ws_sign", "source.indexed", { id: "kb_1", name: "Pricing" });
    await aws.queues.idle();

    expect(receiver.received).toHaveLength(1);
    const [got] = receiver.received;
    if (!got) throw new Error("no delivery");
    expect(verify(hook.secret, got.headers, got.body)).toBe(true);
    expect(got.headers["webhook-id"]).toMatch(/^msg_/);
    expect(got.headers["content-type"]).toBe("application/json");
    expect(payload(got)).toEqual({
      type: "source.indexed",
      timestamp: expect.any(String),
      data: { id: "kb_1", name: "Pricing" },
    });
    // A tampered body, another secret or an old timestamp do not verify.
    expect(verify(hook.secret, got.headers, got.body.replace("Pricing", "Pr1cing"))).toBe(false);
    const other = await endpoints.create("ws_sign", {
      url: receiver.url,
      events: ["source.failed"],
    });
    expect(verify(other.secret, got.headers, got.body)).toBe(false);
    const old = {
      ...got.headers,
      "webhook-timestamp": String(Math.floor(Date.now() / 1000) - 600),
    };
    expect(verify(hook.secret, old, got.body)).toBe(false);
  });

  it("retries a failing endpoint with growing delays, then logs the delivery", async () => {
    deliverer = delivererWith([1, 2]);
    const hook = await endpoints.create("ws_retry", {
      url: receiver.url,
      events: ["crawl.completed"],
    });
    receiver.answer(500, 503);
    await emitterFor().emit("ws_retry", "crawl.completed", { crawlId: "crawl_1" });
    const [first, second, third] = await receiver.waitFor(3);
    await aws.queues.idle();
    if (!first || !second || !third) throw new Error("missing attempts");

    expect(receiver.received).toHaveLength(3);
    // The same event id on every attempt, each signed afresh; the gaps follow the schedule.
    expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    for (const r of receiver.received) expect(verify(hook.secret, r.headers, r.body)).toBe(true);
    expect(second.at - first.at).toBeGreaterThanOrEqual(1000);
    expect(third.at - second.at).toBeGreaterThanOrEqual(2000);

    const log = await endpoints.deliveries("ws_retry", hook.id, 10);
    expect(log.items.map((a) => [a.attempt, a.result, a.statusCode])).toEqual([
      [3, "delivered", 200],
      [2, "retrying", 503],
      [1, "retrying", 500],
    ]);
    expect(log.items[2]?.error).toBe("The endpoint answered HTTP 500");
    expect(log.items[2]?.response).toBe("answered 500");
    expect(log.items[2]?.nextAttemptAt).not.toBeNull();
    expect(log.items[0]?.nextAttemptAt).toBeNull();
  });

  it("gives up after the last attempt: the message goes to the dead-letter queue, posted no more", async () => {
    deliverer = delivererWith([0, 0]);
    const hook = await endpoints.create("ws_dead", {
      url: receiver.url,
      events: ["source.failed"],
    });
    receiver.answer(500, 500, 500);
    await emitterFor().emit("ws_dead", "source.failed", { id: "kb_2" });
    await receiver.waitFor(3);
    await aws.queues.idle();

    // Three attempts, then the queue's own retries of the last one post nothing more.
    expect(receiver.received).toHaveLength(3);
    const dead = aws.queues
      .deadLetters("webhooks")
      .map((d) => WebhookMessage.parse(JSON.parse(d.body)));
    expect(dead.filter((m) => m.endpointId === hook.id)).toMatchObject([
      { attempt: 3, type: "source.failed", data: { id: "kb_2" } },
    ]);
    const log = await endpoints.deliveries("ws_dead", hook.id, 10);
    expect(log.items.map((a) => a.result)).toEqual(["dead_lettered", "retrying", "retrying"]);

    // A redriven message makes its last attempt again, and a working endpoint takes it.
    receiver.answer(200);
    aws.queues.redrive("webhooks");
    await receiver.waitFor(4);
    await aws.queues.idle();
    expect(aws.queues.deadLetters("webhooks")).toEqual([]);
    expect((await endpoints.deliveries("ws_dead", hook.id, 1)).items[0]).toMatchObject({
      attempt: 3,
      result: "delivered",
    });
  });

  it("waits longer than a queue delay allows by going round the queue again", async () => {
    const hook = await endpoints.create("ws_wait", {
      url: receiver.url,
      events: ["source.failed"],
    });
    const message: WebhookMessage = {
      kind: "webhook-delivery",
      workspaceId: "ws_wait",
      endpointId: hook.id,
      eventId: "msg_wait",
      type: "source.failed",
      occurredAt: new Date().toISOString(),
      data: {},
      attempt: 2,
      notBefore: Date.now() + 3 * 3600_000,
    };
    // A queue nothing consumes, so the message can be seen waiting there.
    const parking = aws.queue<WebhookMessage>("webhooks-parking");
    const waiting = new WebhookDeliverer({
      endpoints,
      queue: parking,
      poster: open,
      retrySeconds: [0],
      gate: deliveryGate(aws.table, parking),
    });
    const outcome = await waiting.handle(message, { receiveCount: 1, maxReceiveCount: 3 });
    expect(outcome).toBe("waiting");
    expect(receiver.received).toEqual([]);
    expect(aws.queues.pending("webhooks-parking").map((b) => JSON.parse(b))).toMatchObject([
      { eventId: "msg_wait", attempt: 2, notBefore: message.notBefore },
    ]);
  });

  it("drops the deliveries of a deleted endpoint", async () => {
    deliverer = delivererWith([0]);
    const hook = await endpoints.create("ws_gone", {
      url: receiver.url,
      events: ["source.indexed"],
    });
    await endpoints.delete("ws_gone", hook.id);
    const outcome = await deliverer.handle(
      {
        kind: "webhook-delivery",
        workspaceId: "ws_gone",
        endpointId: hook.id,
        eventId: "msg_gone",
        type: "source.indexed",
        occurredAt: new Date().toISOString(),
        data: {},
        attempt: 1,
      },
      { receiveCount: 1, maxReceiveCount: 3 },
    );
    expect(outcome).toBe("dropped");
    expect(receiver.received).toEqual([]);
  });

  it("refuses a private endpoint on every attempt when private URLs are not allowed", async () => {
    deliverer = delivererWith([0], new SafeFetcher({ allowPrivate: false, timeoutMs: 2000 }));
    const hook = await endpoints.create("ws_ssrf", {
      url: receiver.url,
      events: ["source.indexed"],
    });
    await emitterFor().emit("ws_ssrf", "source.indexed", { id: "kb_3" });
    await aws.queues.idle();
    expect(receiver.received).toEqual([]);
    const log = await endpoints.deliveries("ws_ssrf", hook.id, 10);
    expect(log.items.map((a) => [a.result, a.statusCode])).toEqual([
      ["dead_lettered", null],
      ["retrying", null],
    ]);
    expect(log.items[0]?.error).toMatch(/not a public address \(loopback\)/);
  });

  it("signs with a secret kept in plain text before secrets were sealed, and seals it when migrated", async () => {
    deliverer = delivererWith([0]);
    const id = newId("webhook");
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    // An endpoint as the service stored it before: its secret as it is.
    await aws.table.put({
      pk: wsKey("ws_legacy"),
      sk: `WEBHOOK#${id}`,
      workspaceId: "ws_legacy",
      id,
      url: receiver.url,
      events: ["source.indexed"],
      description: null,
      secret,
      createdAt: new Date().toISOString(),
    });
    const sent = async () => {
      receiver.received.length = 0;
      await emitterFor().emit("ws_legacy", "source.indexed", { id: "kb_legacy" });
      await aws.queues.idle();
      const [got] = receiver.received;
      return got !== undefined && verify(secret, got.headers, got.body);
    };
    expect(await sent()).toBe(true);

    expect(await endpoints.sealPlaintextSecrets("ws_legacy")).toBe(1);
    const stored = await aws.table.get(wsKey("ws_legacy"), `WEBHOOK#${id}`);
    expect(stored).not.toHaveProperty("secret");
    expect(stored?.sealedSecret).toMatchObject({ key: expect.any(String) });
    expect(JSON.stringify(stored)).not.toContain(secret.slice("whsec_".length));
    // The same secret signs on, and a second run finds nothing left to seal.
    expect(await sent()).toBe(true);
    expect(await endpoints.sealPlaintextSecrets("ws_legacy")).toBe(0);
  });

  it("logs a failed attempt with the endpoint's origin and path, never its query or user info", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    // One attempt, no retry: the message is given up (and would be dead-lettered).
    const once = new WebhookDeliverer({
      endpoints,
      queue,
      poster: open,
      retrySeconds: [],
      gate: deliveryGate(aws.table, queue),
    });
    const urls = [
      `http://127.0.0.1:${port}/hooks/kb?token=s3cr3t-query#s3cr3t-fragment`,
      `http://hook:s3cr3t-password@127.0.0.1:${port}/hooks/kb`,
    ];
    for (const url of urls) {
      const hook = await endpoints.create("ws_redact", { url, events: ["source.indexed"] });
      const message: WebhookMessage = {
        kind: "webhook-delivery",
        workspaceId: "ws_redact",
        endpointId: hook.id,
        eventId: `msg_redact_${hook.id}`,
        type: "source.indexed",
        occurredAt: new Date().toISOString(),
        data: {},
        attempt: 1,
      };
      const handle = recordHandler(WebhookMessage, (m, d) => once.handle(m, d), 3);
      const lines = await loggedWhile(() =>
        expect(
          handle({
            messageId: "m1",
            body: JSON.stringify(message),
            attributes: { ApproximateReceiveCount: "1" },
          }),
        ).rejects.toThrow(DeliveryAbandoned),
      );
      const failed = lines.find((line) => line.message === "webhook attempt failed");
      expect(failed, url).toMatchObject({
        endpointId: hook.id,
        url: `http://127.0.0.1:${port}/hooks/kb`,
        result: "dead_lettered",
      });
      // A refused connection's error names the URL it failed on: cut the same way.
      if (url.includes("token")) {
        expect(failed?.error).toBe(
          `http://127.0.0.1:${port}/hooks/kb could not be reached (ECONNREFUSED)`,
        );
      }
      expect(lines.map((line) => line.message)).toContain("message failed");
      expect(JSON.stringify(lines), url).not.toContain("s3cr3t");
    }
  });

  it("keeps workspaces apart: an event reaches only its own workspace's endpoints", async () => {
    deliverer = delivererWith([0]);
    const mine = await endpoints.create("ws_mine", {
      url: receiver.url,
      events: ["source.indexed"],
    });
    await endpoints.create("ws_theirs", { url: receiver.url, events: ["source.indexed"] });
    await emitterFor().emit("ws_mine", "source.indexed", { id: "kb_4" });
    await aws.queues.idle();
    expect(receiver.received).toHaveLength(1);
    expect(
      verify(mine.secret, receiver.received[0]?.headers ?? {}, receiver.received[0]?.body ?? ""),
    ).toBe(true);
    expect(await endpoints.find("ws_theirs", mine.id)).toBeUndefined();
    await expect(endpoints.delete("ws_theirs", mine.id)).rejects.toMatchObject({
      code: "not_found",
    });
  });
});

describe("emitting events", () => {
  it("never fails the caller: a queue that cannot be reached is logged, and the work goes on", async () => {
    await endpoints.create("ws_down", { url: receiver.url, events: ["source.indexed"] });
    const broken = aws.queue<WebhookMessage>("no-such-queue");
    const emitter = new WebhookEmitter({ endpoints, queue: broken, cacheSeconds: 0 });
    await expect(
      emitter.emit("ws_down", "source.indexed", { id: "kb_5" }),
    ).resolves.toBeUndefined();
  });

  it("reads a workspace's subscriptions once within the cache time", async () => {
    let reads = 0;
    const counting = {
      subscribers: (workspaceId: string) => {
        reads++;
        return endpoints.subscribers(workspaceId);
      },
    };
    const emitter = new WebhookEmitter({ endpoints: counting, queue, cacheSeconds: 60 });
    await emitter.emit("ws_cache", "source.indexed", {});
    await emitter.emit("ws_cache", "source.failed", {});
    await emitter.emit("ws_other", "source.indexed", {});
    expect(reads).toBe(2);
  });

  it("limits a workspace to 20 endpoints, even when created all at once", async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, () =>
        endpoints.create("ws_many", { url: receiver.url, events: ["source.indexed"] }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(20);
    expect(results.find((r) => r.status === "rejected")).toMatchObject({
      reason: { code: "limit_reached" },
    });
    const first = (await endpoints.list("ws_many", 1)).items[0];
    if (!first) throw new Error("no endpoint");
    await endpoints.delete("ws_many", first.id);
    await expect(
      endpoints.create("ws_many", { url: receiver.url, events: ["source.indexed"] }),
    ).resolves.toMatchObject({ url: receiver.url });
  });
});
