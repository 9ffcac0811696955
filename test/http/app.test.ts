import { createRoute, z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { createModule, createServiceApp } from "../../lib/http/app.js";

function appWith(handler: () => never) {
  const module = createModule();
  module.openapi(
    createRoute({ method: "get", path: "/api/boom", responses: { 200: { description: "never" } } }),
    handler,
  );
  module.openapi(
    createRoute({
      method: "post",
      path: "/api/echo",
      request: {
        body: {
          required: true,
          content: { "application/json": { schema: z.strictObject({ n: z.number() }) } },
        },
      },
      responses: { 200: { description: "echo" } },
    }),
    (c) => c.json(c.req.valid("json"), 200),
  );
  return createServiceApp({
    authenticate: async (c, next) => {
      c.set("workspaceId", "ws_test");
      await next();
    },
    modules: [module],
  });
}

describe("the service app", () => {
  it("turns an unexpected error into a 500 that names a request id and leaks nothing", async () => {
    const app = appWith(() => {
      throw new Error("secret database password in this message");
    });
    const res = await app.request("/api/boom");
    expect(res.status).toBe(500);
    const body = (await res.json()) as {
      error: { code: string; message: string; requestId: string };
    };
    expect(body.error.code).toBe("internal_error");
    expect(body.error.requestId).toBe(res.headers.get("x-request-id"));
    expect(JSON.stringify(body)).not.toContain("secret");
  });

  it("takes the request id from API Gateway when present", async () => {
    const app = appWith(() => {
      throw new Error("x");
    });
    const res = await app.request(
      "/api/boom",
      {},
      { event: { requestContext: { requestId: "apigw-123" } } },
    );
    expect(((await res.json()) as { error: { requestId: string } }).error.requestId).toBe(
      "apigw-123",
    );
  });

  it("validates bodies into the error shape, and answers 415 for other media types", async () => {
    const app = appWith(() => {
      throw new Error("unused");
    });
    const wrongType = await app.request("/api/echo", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ n: "one" }),
    });
    expect(wrongType.status).toBe(400);
    expect(await wrongType.json()).toMatchObject({
      error: { code: "validation_failed", details: { issues: [{ path: "n" }] } },
    });
    const text = await app.request("/api/echo", {
      method: "POST",
      headers: { "content-type": "text/plain", "content-length": "5" },
      body: "hello",
    });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ error: { code: "unsupported_media_type" } });
  });
});
