import { handle } from "hono/aws-lambda";
import { competitorRoutes } from "../lib/competitors/routes.js";
import { loadCorsOrigins } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { denyAll } from "../lib/http/auth.js";
import { docsModule } from "../lib/http/docs.js";
import { getHealth, healthModule } from "../lib/http/health.js";
import { artifactRoutes } from "../lib/intel/artifacts-routes.js";
import { generateRoutes } from "../lib/intel/generate-routes.js";
import { intelRoutes } from "../lib/intel/routes.js";
import { invocation } from "../lib/invocation.js";
import { crawlRoutes } from "../lib/knowledge/crawl/routes.js";
import { knowledgeRoutes } from "../lib/knowledge/sources/routes.js";
import { uploadRoutes } from "../lib/knowledge/uploads/routes.js";
import { usageRoutes } from "../lib/limits/routes.js";
import { webhookRoutes } from "../lib/webhooks/routes.js";

/**
 * Every documented route. Listed here rather than read from the manifest, whose loaders would
 * pull every function into this bundle; a test checks the two agree.
 */
export const documentedRoutes = [
  getHealth,
  ...knowledgeRoutes,
  ...crawlRoutes,
  ...uploadRoutes,
  ...competitorRoutes,
  ...intelRoutes,
  ...generateRoutes,
  ...artifactRoutes,
  ...webhookRoutes,
  ...usageRoutes,
];

/** The API reference (/openapi.json, /docs) and /health, public. It touches no store, so it reads only CORS_ORIGINS. */
export const app = createServiceApp({
  authenticate: denyAll,
  corsOrigins: loadCorsOrigins(),
  modules: [docsModule(documentedRoutes), healthModule()],
});

export const handler = invocation(handle(app));
