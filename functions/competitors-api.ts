import { handle } from "hono/aws-lambda";
import { competitorsApi } from "../lib/competitors/api.js";
import { API_CHECK_LIMITS } from "../lib/competitors/check.js";
import { createCompetitorServices } from "../lib/competitors/services.js";
import { loadConfig, quotaLimits } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { apiGuards } from "../lib/http/guards.js";
import { Quotas } from "../lib/limits/quotas.js";
import { createStores } from "../lib/store/clients.js";
import { SafeFetcher } from "../lib/web/fetch.js";

// Wired from the stores directly: the model client and search of the other API functions would
// more than double this bundle for nothing it serves.
const config = loadConfig();
const stores = createStores(config);
const services = createCompetitorServices({
  table: stores.table,
  blobs: stores.blobs,
  fetcher: new SafeFetcher({ allowPrivate: config.ALLOW_PRIVATE_URLS }),
  limits: API_CHECK_LIMITS,
});

/** Tracked competitors, their checks and change events: /api/intel/competitors/*, /api/intel/events/* */
export const app = createServiceApp({
  ...apiGuards(stores.table, config),
  modules: [
    competitorsApi({
      ...services,
      checksQueue: stores.checksQueue,
      quotas: new Quotas(stores.table, quotaLimits(config)),
      allowPrivate: config.ALLOW_PRIVATE_URLS,
    }),
  ],
});

export const handler = handle(app);
