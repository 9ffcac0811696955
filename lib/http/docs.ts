import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { AppEnv, Module } from "./app.js";

/** The OpenAPI 3.1 document, built from the same route definitions that validate requests. */
export function openApiDocument(routes: RouteConfig[]) {
  const app = new OpenAPIHono();
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
    type: "http",
    scheme: "bearer",
    description: "An API key from `npm run keys -- create`",
  });
  for (const route of routes) {
    app.openAPIRegistry.registerPath(
      route.path.startsWith("/api/") ? { ...route, security: [{ apiKey: [] }] } : route,
    );
  }
  return app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Knowledge Base and Marketing Intel API",
      version: "1.0.0",
      description:
        'Errors always have the body `{"error":{"code","message","details?"}}`. Lists are paged with `limit` and the opaque `cursor` from `nextCursor`.',
    },
  });
}

const page = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<script id="api-reference" data-url="openapi.json"></script>
<script src="https://cdn.jsdelivr.net/npm/@scalar/api-reference"></script>
</body>
</html>`;

/** Serves `/openapi.json` and an interactive reference at `/docs` (no key needed). */
export function docsModule(routes: RouteConfig[]): Module {
  const app = new OpenAPIHono<AppEnv>();
  let document: ReturnType<typeof openApiDocument> | undefined;
  app.get("/openapi.json", (c) => {
    document ??= openApiDocument(routes);
    return c.json(document);
  });
  app.get("/docs", (c) => c.html(page));
  return app;
}
