import { handle } from "hono/aws-lambda";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { intelApi } from "../lib/intel/api.js";
import { createServices } from "../lib/services.js";

const services = createServices(loadConfig());

/** Brand profile and grounded chat: /api/brand, /api/chat */
export const app = createServiceApp({
  ...services.guards,
  modules: [intelApi({ brands: services.brands, chat: services.chat })],
});

export const handler = handle(app);
