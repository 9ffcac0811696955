import { handle } from "hono/aws-lambda";
import { intelServices } from "../lib/compose/intel-api.js";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { artifactsRoutes } from "../lib/intel/artifacts/routes.js";
import { battlecardRoutes } from "../lib/intel/battlecard/routes.js";
import { brandRoutes } from "../lib/intel/brand/routes.js";
import { chatRoutes } from "../lib/intel/chat/routes.js";
import { generateRoutes } from "../lib/intel/generate/routes.js";
import { invocation } from "../lib/invocation.js";
import { usageRoutes } from "../lib/limits/routes.js";

const services = intelServices(loadConfig());

/**
 * Brand profile, grounded chat, intel modules, saved artifacts, competitors' battlecards and the
 * usage of daily quotas and workspace caps: /api/brand, /api/chat, /api/intel/{module},
 * /api/artifacts, /api/intel/competitors/{id}/battlecard, /api/usage
 */
export const app = createServiceApp({
  ...services.guards,
  modules: [
    brandRoutes({ brands: services.brands }),
    chatRoutes({ chat: services.chat }),
    generateRoutes({ generator: services.intel }),
    artifactsRoutes({ artifacts: services.artifacts }),
    battlecardRoutes({ battlecards: services.battlecards }),
    usageRoutes({ quotas: services.quotas, caps: services.caps }),
  ],
});

export const handler = invocation(handle(app));
