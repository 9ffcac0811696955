import { handle } from "hono/aws-lambda";
import { exportsServices } from "../lib/compose/exports-api.js";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { invocation } from "../lib/invocation.js";
import { exportRoutes } from "../lib/workspaces/export/routes.js";

const services = exportsServices(loadConfig());

/** Workspace exports: /api/export, /api/export/{exportId}. */
export const app = createServiceApp({
  ...services.guards,
  modules: [
    exportRoutes({
      jobs: services.jobs,
      blobs: services.stores.blobs,
      queue: services.queue,
      quotas: services.quotas,
      urlSeconds: services.config.EXPORT_URL_TTL_SECONDS,
    }),
  ],
});

export const handler = invocation(handle(app));
