import { createRoute, z } from "@hono/zod-openapi";
import { createModule, type Module } from "./app.js";
import { commonErrors, jsonResponse, NoQuery } from "./schemas.js";

/** Version of the API contract, as the OpenAPI document and `/health` state it. */
export const API_VERSION = "1.0.0";

const HealthSchema = z
  .strictObject({
    status: z.literal("ok"),
    version: z.string().openapi({ example: API_VERSION }),
  })
  .openapi("Health");

export const getHealth = createRoute({
  method: "get",
  path: "/health",
  operationId: "getHealth",
  tags: ["Service"],
  summary: "Is the API answering (no key needed)",
  description:
    "For load balancers and uptime checks: answers 200 while the API is deployed and routing. It reads no store, so it costs nothing and says nothing about any workspace; stores' troubles show as 5xx on the routes that use them.",
  security: [],
  request: { query: NoQuery },
  responses: {
    200: jsonResponse(HealthSchema, "The API answers"),
    400: commonErrors[400],
  },
});

/** `GET /health`, public and never cached. */
export function healthModule(): Module {
  const app = createModule();
  app.openapi(getHealth, (c) =>
    c.json({ status: "ok" as const, version: API_VERSION }, 200, { "Cache-Control": "no-store" }),
  );
  return app;
}
