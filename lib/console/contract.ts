import type { RouteConfig } from "@hono/zod-openapi";

/** The console's public routes (served by `routes.ts`): its page at the API's root and its assets. */
export const consoleContract: RouteConfig[] = ["/", "/console/app.js", "/console/app.css"].map(
  (path) => ({ method: "get", path, responses: {} }),
);
