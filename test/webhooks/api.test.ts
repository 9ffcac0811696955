import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../lib/config.js";
import { createServiceApp } from "../../lib/http/app.js";
import { createStores } from "../../lib/store/clients.js";
import { wsKey } from "../../lib/store/table.js";
import { webhooksRoutes } from "../../lib/webhooks/routes.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { payload, type Receiver, startReceiver, verify } from "../support/webhook-receiver.js";

/** /api/webhooks on the whole local runtime: the API, the emitting workers and the webhooks worker. */

let rt: TestRuntime;
let receiver: Receiver;

beforeAll(async () => {
  // The receiver is on loopback, reachable only with this development switch.
  process.env.ALLOW_PRIVATE_URLS = "true";
  process.env.WEBHOOK_CACHE_SECONDS = "0";
  process.env.WEBHOOK_RETRY_SECONDS = "1";
  receiver = await startReceiver();
  rt = await startTestRuntime();
});
afterAll(async () => {
  await rt.close();
  await receiver.close();
});

/** The runtime's table, read as the functions read it (the runtime set the environment). */
const table = () => createStores(loadConfig()).table;

interface Created {
  id: string;
  url: string;
  events: string[];
  secret: string;
}

const register = async (events: string[], key?: string) => {
  const res = await rt.call("/api/webhooks", {
    method: "POST",
    json: { url: receiver.url, events, description: "test receiver" },
    ...(key ? { key } : {}),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as Created;
};

describe("webhooks through the local runtime", () => {
  it("registers an endpoint, shows its secret once, and keeps it to its workspace", async () => {
    const hook = await register(["crawl.completed"]);
    expect(hook).toMatchObject({ url: receiver.url, events: ["crawl.completed"] });
    expect(hook.secret).toMatch(/^whsec_/);

    const one = await (await rt.call(`/api/webhooks/${hook.id}`)).json();
    expect(one).toEqual({
      id: hook.id,
      kind: "webhook",
      url: receiver.url,
      events: ["crawl.completed"],
      description: "test receiver",
      createdAt: expect.any(String),
      circuit: { state: "closed", consecutiveFailures: 0, openUntil: null },
    });
    const list = (await (await rt.call("/api/webhooks")).json()) as { webhooks: Created[] };
    expect(list.webhooks.map((w) => w.id)).toContain(hook.id);
    expect(JSON.stringify(list)).not.toContain("whsec_");

    // Another workspace sees none of it.
    const theirs = { key: rt.otherKey };
    expect((await rt.call(`/api/webhooks/${hook.id}`, theirs)).status).toBe(404);
    expect((await rt.call(`/api/webhooks/${hook.id}/deliveries`, theirs)).status).toBe(404);
    expect(
      (await rt.call(`/api/webhooks/${hook.id}/test`, { ...theirs, method: "POST" })).status,
    ).toBe(404);
    expect(
      (await rt.call(`/api/webhooks/${hook.id}`, { ...theirs, method: "DELETE" })).status,
    ).toBe(404);
    const their = (await (await rt.call("/api/webhooks", theirs)).json()) as {
      webhooks: Created[];
    };
    expect(their.webhooks).toEqual([]);

    expect((await rt.call(`/api/webhooks/${hook.id}`, { method: "DELETE" })).status).toBe(204);
    expect((await rt.call(`/api/webhooks/${hook.id}`)).status).toBe(404);
  });

  it("answers a retried creation with the same endpoint, but never its secret again, when it carries an Idempotency-Key", async () => {
    const create = () =>
      rt.call("/api/webhooks", {
        method: "POST",
        headers: { "idempotency-key": "webhook-retry-1" },
        json: { url: receiver.url, events: ["source.failed"] },
      });
    const first = (await (await create()).json()) as Created;
    expect(first.secret).toMatch(/^whsec_/);
    const { secret, ...shown } = first;
    const again = await create();
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(shown);
    // Nor once the endpoint is deleted, nor in what the key keeps for its 24 hours.
    expect((await rt.call(`/api/webhooks/${first.id}`, { method: "DELETE" })).status).toBe(204);
    const late = await create();
    expect(late.headers.get("idempotent-replayed")).toBe("true");
    expect(await late.json()).toEqual(shown);
    const kept = await table().all(wsKey(rt.runtime.workspaceId), "IDEMPOTENCY#");
    expect(kept.length).toBeGreaterThan(0);
    expect(JSON.stringify(kept)).not.toContain(secret);
  });

  it("keeps each secret sealed under the KMS key, and signs with it", async () => {
    const hook = await register(["source.failed"]);
    const stored = await table().get(wsKey(rt.runtime.workspaceId), `WEBHOOK#${hook.id}`);
    expect(stored).not.toHaveProperty("secret");
    expect(stored?.sealedSecret).toEqual({
      key: expect.any(String),
      iv: expect.any(String),
      tag: expect.any(String),
      data: expect.any(String),
    });
    expect(JSON.stringify(stored)).not.toContain(hook.secret);
    expect(JSON.stringify(stored)).not.toContain(hook.secret.slice("whsec_".length));
    receiver.received.length = 0;
    expect((await rt.call(`/api/webhooks/${hook.id}/test`, { method: "POST" })).status).toBe(202);
    const [got] = await receiver.waitFor(1);
    expect(got && verify(hook.secret, got.headers, got.body)).toBe(true);
  });

  it("refuses what it cannot use with the project's 400", async () => {
    for (const json of [
      { url: receiver.url, events: [] },
      { url: receiver.url, events: ["source.deleted"] },
      { url: "ftp://example.com/hook", events: ["source.indexed"] },
      { url: receiver.url, events: ["source.indexed"], secret: "mine" },
    ]) {
      const res = await rt.call("/api/webhooks", { method: "POST", json });
      expect([JSON.stringify(json), res.status]).toEqual([JSON.stringify(json), 400]);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
        "validation_failed",
      );
    }
    expect((await rt.call("/api/webhooks?colour=red")).status).toBe(400);
  });

  it("tells a workspace's endpoint, and only it, that a new text source is indexed", async () => {
    const hook = await register(["source.indexed", "source.failed"]);
    const theirs = await register(["source.indexed"], rt.otherKey);
    receiver.received.length = 0;

    const created = await rt.call("/api/knowledge", {
      method: "POST",
      json: { text: "# Pricing\nPro costs $49 a month.", name: "Pricing" },
    });
    const { id } = (await created.json()) as { id: string };
    const [got] = await receiver.waitFor(1);
    if (!got) throw new Error("no delivery");
    expect(verify(hook.secret, got.headers, got.body)).toBe(true);
    expect(verify(theirs.secret, got.headers, got.body)).toBe(false);
    expect(payload(got)).toMatchObject({
      type: "source.indexed",
      data: { id, name: "Pricing", status: "indexed", chunk_count: 1 },
    });
    await rt.runtime.queues.idle();
    expect(receiver.received).toHaveLength(1);

    const log = (await (await rt.call(`/api/webhooks/${hook.id}/deliveries`)).json()) as {
      deliveries: Array<{ type: string; result: string; statusCode: number; attempt: number }>;
    };
    expect(log.deliveries).toMatchObject([
      { type: "source.indexed", result: "delivered", statusCode: 200, attempt: 1 },
    ]);
  });

  it("sends a test event on request, retried until the endpoint answers", async () => {
    const hook = await register(["refresh.completed"]);
    receiver.received.length = 0;
    receiver.answer(500);
    const res = await rt.call(`/api/webhooks/${hook.id}/test`, { method: "POST" });
    expect(res.status).toBe(202);
    const { eventId } = (await res.json()) as { eventId: string };
    const [first, second] = await receiver.waitFor(2);
    expect(payload(second ?? first ?? { body: "{}", headers: {}, at: 0 })).toMatchObject({
      type: "webhook.test",
      data: { endpointId: hook.id },
    });
    expect(first?.headers["webhook-id"]).toBe(eventId);
    await rt.runtime.queues.idle();
    const log = (await (await rt.call(`/api/webhooks/${hook.id}/deliveries?limit=1`)).json()) as {
      deliveries: Array<{ result: string; attempt: number }>;
      nextCursor: string | null;
    };
    expect(log.deliveries).toMatchObject([{ result: "delivered", attempt: 2 }]);
    const rest = (await (
      await rt.call(`/api/webhooks/${hook.id}/deliveries?cursor=${log.nextCursor}`)
    ).json()) as { deliveries: Array<{ result: string; statusCode: number }> };
    expect(rest.deliveries).toMatchObject([{ result: "retrying", statusCode: 500 }]);
  });
});

describe("webhook URLs without the private-URL switch", () => {
  it("refuses loopback, private and metadata endpoints with a 400 on url", async () => {
    const app = createServiceApp({
      authenticate: async (c, next) => {
        c.set("workspaceId", "ws_ssrf");
        await next();
      },
      modules: [
        // Refused before any store is touched: none is given.
        webhooksRoutes({
          endpoints: undefined as never,
          queue: undefined as never,
          allowPrivate: false,
          circuits: undefined as never,
        }),
      ],
    });
    for (const url of [
      receiver.url,
      "http://localhost:8080/hook",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]/hook",
      "http://10.0.0.1/hook",
    ]) {
      const res = await app.request("/api/webhooks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url, events: ["source.indexed"] }),
      });
      const body = (await res.json()) as {
        error: { details: { issues: Array<{ path: string }> } };
      };
      expect([url, res.status, body.error.details.issues[0]?.path]).toEqual([url, 400, "url"]);
    }
  });
});
