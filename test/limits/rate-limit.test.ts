import { createRoute } from "@hono/zod-openapi";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createModule, createServiceApp } from "../../lib/http/app.js";
import { rateLimit } from "../../lib/limits/rate-limit.js";
import { wsKey } from "../../lib/store/table.js";
import { bearerWorkspace } from "../support/app.js";
import { startAws, type TestAws } from "../support/aws.js";

/**
 * The per-workspace rate limit in the service app, over dynalite: the workspace is the bearer
 * token, so a test speaks for any workspace it likes.
 */

const LIMIT = 5;
let aws: TestAws;
let workspaces = 0;

beforeAll(async () => {
  aws = await startAws();
});
afterAll(() => aws.close());
afterEach(() => {
  vi.useRealTimers();
});

function limitedApp(perMinute = LIMIT) {
  const module = createModule();
  module.openapi(
    createRoute({ method: "get", path: "/api/ping", responses: { 200: { description: "pong" } } }),
    (c) => c.json({ ok: true }, 200),
  );
  return createServiceApp({
    authenticate: bearerWorkspace,
    rateLimit: rateLimit(aws.table, perMinute),
    modules: [module],
  });
}

const ping = (app: ReturnType<typeof limitedApp>, workspace: string) =>
  app.request("/api/ping", { headers: { authorization: `Bearer ${workspace}` } });

/** Pins the clock (Date only: timers and I/O stay real) to `seconds` past a minute. */
function at(seconds: number) {
  vi.useFakeTimers({ toFake: ["Date"] });
  const minute = Date.UTC(2026, 0, 5, 12, 30);
  vi.setSystemTime(minute + seconds * 1000);
  return minute / 1000;
}

describe("the per-workspace rate limit", () => {
  it("counts down what is left in the minute, then answers 429 until the next one", async () => {
    const app = limitedApp();
    const ws = `ws_rate${++workspaces}`;
    const window = at(50);
    const remaining: Array<string | null> = [];
    for (let i = 0; i < LIMIT; i++) {
      const res = await ping(app, ws);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-limit")).toBe(String(LIMIT));
      remaining.push(res.headers.get("ratelimit-remaining"));
    }
    expect(remaining).toEqual(["4", "3", "2", "1", "0"]);

    const refused = await ping(app, ws);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("10");
    expect(await refused.json()).toEqual({
      error: {
        code: "rate_limited",
        message: `Too many requests: this workspace may make ${LIMIT} per minute`,
        details: { limit: LIMIT, windowSeconds: 60 },
      },
    });
    // The minute's counter goes away by itself a minute after its window ends.
    const counter = await aws.table.get(wsKey(ws), `RATE#${window}`);
    expect(counter).toMatchObject({ count: LIMIT, expiresAt: window + 120 });

    vi.setSystemTime((window + 59) * 1000);
    expect((await ping(app, ws)).headers.get("retry-after")).toBe("1");
    vi.setSystemTime((window + 60) * 1000);
    const next = await ping(app, ws);
    expect(next.status).toBe(200);
    expect(next.headers.get("ratelimit-remaining")).toBe(String(LIMIT - 1));
  });

  it("limits each workspace on its own", async () => {
    const app = limitedApp(1);
    const [a, b] = [`ws_rate${++workspaces}`, `ws_rate${++workspaces}`];
    at(0);
    expect((await ping(app, a)).status).toBe(200);
    expect((await ping(app, a)).status).toBe(429);
    expect((await ping(app, b)).status).toBe(200);
  });

  it("lets exactly the limit through when requests race", async () => {
    const app = limitedApp(7);
    const ws = `ws_rate${++workspaces}`;
    at(30);
    const statuses = (await Promise.all(Array.from({ length: 30 }, () => ping(app, ws)))).map(
      (res) => res.status,
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(7);
    expect(statuses.filter((s) => s === 429)).toHaveLength(23);
  });
});
