import { handle } from "hono/aws-lambda";
import { webhooksServices } from "../lib/compose/webhooks-api.js";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { invocation } from "../lib/invocation.js";
import { webhooksRoutes } from "../lib/webhooks/routes.js";

const services = webhooksServices(loadConfig());

/** Webhook endpoints, their delivery logs and test events: /api/webhooks/* */
export const app = createServiceApp({
  ...services.guards,
  modules: [
    webhooksRoutes({
      endpoints: services.endpoints,
      queue: services.stores.webhooksQueue,
      allowPrivate: services.config.ALLOW_PRIVATE_URLS,
      circuits: services.circuits,
    }),
  ],
});

export const handler = invocation(handle(app));
