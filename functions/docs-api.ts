import { handle } from "hono/aws-lambda";
import { competitorsContract } from "../lib/competitors/contract.js";
import { loadCorsOrigins } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { denyAll } from "../lib/http/auth.js";
import { docsModule } from "../lib/http/docs.js";
import { getHealth, healthModule } from "../lib/http/health.js";
import { artifactsContract } from "../lib/intel/artifacts/contract.js";
import { battlecardContract } from "../lib/intel/battlecard/contract.js";
import { brandContract } from "../lib/intel/brand/contract.js";
import { chatContract } from "../lib/intel/chat/contract.js";
import { generateContract } from "../lib/intel/generate/contract.js";
import { invocation } from "../lib/invocation.js";
import { crawlContract } from "../lib/knowledge/crawl/contract.js";
import { sourcesContract } from "../lib/knowledge/sources/contract.js";
import { uploadsContract } from "../lib/knowledge/uploads/contract.js";
import { usageContract } from "../lib/limits/contract.js";
import { webhooksContract } from "../lib/webhooks/contract.js";
import { exportContract } from "../lib/workspaces/export/contract.js";

/**
 * Every documented route. Listed here rather than read from the manifest, whose loaders would
 * pull every function into this bundle; a test checks the two agree.
 */
export const documentedRoutes = [
  getHealth,
  ...sourcesContract,
  ...crawlContract,
  ...uploadsContract,
  ...competitorsContract,
  ...brandContract,
  ...chatContract,
  ...generateContract,
  ...artifactsContract,
  ...battlecardContract,
  ...webhooksContract,
  ...usageContract,
  ...exportContract,
];

/** The API reference (/openapi.json, /docs) and /health, public. It touches no store, so it reads only CORS_ORIGINS. */
export const app = createServiceApp({
  authenticate: denyAll,
  corsOrigins: loadCorsOrigins(),
  modules: [docsModule(documentedRoutes), healthModule()],
});

export const handler = invocation(handle(app));
