import { handle } from "hono/aws-lambda";
import { intelServices } from "../lib/compose/intel-api.js";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { intelApi } from "../lib/intel/api.js";
import { artifactsApi } from "../lib/intel/artifacts-api.js";
import { generateApi } from "../lib/intel/generate-api.js";
import { invocation } from "../lib/invocation.js";
import { usageApi } from "../lib/limits/api.js";

const services = intelServices(loadConfig());

/**
 * Brand profile, grounded chat, intel modules, saved artifacts and the usage of daily quotas:
 * /api/brand, /api/chat, /api/intel/{module}, /api/artifacts, /api/usage
 */
export const app = createServiceApp({
  ...services.guards,
  modules: [
    intelApi({ brands: services.brands, chat: services.chat }),
    generateApi({ generator: services.intel }),
    artifactsApi({ artifacts: services.artifacts }),
    usageApi({ quotas: services.quotas }),
  ],
});

export const handler = invocation(handle(app));
