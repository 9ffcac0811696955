import { handle } from "hono/aws-lambda";
import { competitorsRoutes } from "../lib/competitors/routes.js";
import { competitorServices } from "../lib/compose/competitors-api.js";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { invocation } from "../lib/invocation.js";

const services = competitorServices(loadConfig());

/** Tracked competitors, their checks and change events: /api/intel/competitors/*, /api/intel/events/* */
export const app = createServiceApp({
  ...services.guards,
  modules: [
    competitorsRoutes({
      ...services,
      checksQueue: services.stores.checksQueue,
      allowPrivate: services.config.ALLOW_PRIVATE_URLS,
    }),
  ],
});

export const handler = invocation(handle(app));
