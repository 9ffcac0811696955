import { createRoute, z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { localGateway } from "../../infra/local/gateway.js";
import { loadCorsOrigins } from "../../lib/config.js";
import { DomainError } from "../../lib/errors.js";
import { createModule, createServiceApp } from "../../lib/http/app.js";

/**
 * CORS on every answer of a function, whatever produced it: a route, validation, the key check,
 * the rate limit, an unexpected error, an unknown path or method; and preflights without a key.
 */

const PAGE = "http://127.0.0.1:5173";

function appFor(corsOrigins: "*" | string[]) {
  const module = createModule();
  module.openapi(
    createRoute({
      method: "post",
      path: "/api/things",
      request: {
        body: {
          required: true,
          content: { "application/json": { schema: z.strictObject({ n: z.number() }) } },
        },
      },
      responses: { 200: { description: "ok" } },
    }),
    (c) => c.json({ n: c.req.valid("json").n }, 200),
  );
  module.openapi(
    createRoute({ method: "get", path: "/api/boom", responses: { 200: { description: "no" } } }),
    () => {
      throw new Error("boom");
    },
  );
  return createServiceApp({
    corsOrigins,
    authenticate: async (c, next) => {
      if (c.req.header("authorization") !== "Bearer good") {
        throw new DomainError("unauthorized", "A valid API key is required");
      }
      c.set("workspaceId", "ws_cors");
      await next();
    },
    rateLimit: async (c, next) => {
      if (c.req.header("x-test-limit")) {
        throw new DomainError("rate_limited", "Too many requests", { retryAfterSeconds: 7 });
      }
      await next();
    },
    modules: [module],
  });
}

const asPage = (init: RequestInit & { key?: string } = {}) => {
  const { key = "good", ...rest } = init;
  return {
    ...rest,
    headers: { origin: PAGE, authorization: `Bearer ${key}`, ...(rest.headers ?? {}) },
  };
};

describe("CORS", () => {
  const app = appFor([PAGE]);

  it("lets an allowed page read every kind of answer, errors included", async () => {
    const answers = {
      ok: await app.request(
        "/api/things",
        asPage({
          method: "POST",
          body: '{"n":1}',
          headers: { "content-type": "application/json" },
        }),
      ),
      validation: await app.request(
        "/api/things",
        asPage({
          method: "POST",
          body: '{"n":"x"}',
          headers: { "content-type": "application/json" },
        }),
      ),
      unauthorized: await app.request("/api/things", asPage({ method: "POST", key: "bad" })),
      rateLimited: await app.request("/api/boom", asPage({ headers: { "x-test-limit": "1" } })),
      internal: await app.request("/api/boom", asPage()),
      notFound: await app.request("/api/nowhere", asPage()),
      wrongMethod: await app.request("/api/things", asPage({ method: "DELETE" })),
    };
    expect(Object.fromEntries(Object.entries(answers).map(([k, r]) => [k, r.status]))).toEqual({
      ok: 200,
      validation: 400,
      unauthorized: 401,
      rateLimited: 429,
      internal: 500,
      notFound: 404,
      wrongMethod: 405,
    });
    for (const res of Object.values(answers)) {
      expect(res.headers.get("access-control-allow-origin")).toBe(PAGE);
      expect(res.headers.get("vary")).toMatch(/\bOrigin\b/);
      const exposed = (res.headers.get("access-control-expose-headers") ?? "").split(",");
      expect(exposed).toEqual(expect.arrayContaining(["Retry-After", "X-Request-Id"]));
    }
    // The headers a script needs are really there to read.
    expect(answers.rateLimited.headers.get("retry-after")).toBe("7");
    expect(answers.internal.headers.get("x-request-id")).toBeTruthy();
    expect(answers.wrongMethod.headers.get("allow")).toBe("POST");
  });

  it("answers a preflight without a key, naming the headers a page may send", async () => {
    const res = await app.request("/api/things", {
      method: "OPTIONS",
      headers: {
        origin: PAGE,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,idempotency-key",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(PAGE);
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    expect(res.headers.get("access-control-allow-headers")?.toLowerCase().split(",")).toEqual(
      expect.arrayContaining(["authorization", "content-type", "idempotency-key"]),
    );
  });

  it("gives other origins, and every origin by default, nothing to read", async () => {
    const stranger = await app.request("/api/boom", {
      ...asPage(),
      headers: { origin: "http://evil.example", authorization: "Bearer good" },
    });
    expect(stranger.headers.get("access-control-allow-origin")).toBeNull();
    const closed = await appFor(loadCorsOrigins({})).request("/api/boom", asPage());
    expect(closed.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("allows any origin with *", async () => {
    const res = await appFor(loadCorsOrigins({ CORS_ORIGINS: "*" })).request("/api/nowhere", {
      headers: { origin: "http://anywhere.example:8080" },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("reads a list of origins and refuses what is not an origin", () => {
    expect(loadCorsOrigins({ CORS_ORIGINS: " https://a.example , http://b.example:8080" })).toEqual(
      ["https://a.example", "http://b.example:8080"],
    );
    expect(() => loadCorsOrigins({ CORS_ORIGINS: "https://a.example/" })).toThrow(/CORS_ORIGINS/);
    expect(() => loadCorsOrigins({ CORS_ORIGINS: "a.example" })).toThrow(/not an origin/);
  });

  it("puts the headers on the local gateway's own answers too", async () => {
    const gateway = localGateway([app], { maxBodyBytes: 10, corsOrigins: [PAGE] });
    const tooLarge = await gateway.fetch(
      new Request("http://local/api/things", {
        method: "POST",
        headers: { origin: PAGE, "content-length": "11" },
        body: "01234567890",
      }),
    );
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get("access-control-allow-origin")).toBe(PAGE);
    const unowned = await gateway.fetch(
      new Request("http://local/elsewhere", { headers: { origin: PAGE } }),
    );
    expect(unowned.status).toBe(404);
    expect(unowned.headers.get("access-control-allow-origin")).toBe(PAGE);
  });
});
