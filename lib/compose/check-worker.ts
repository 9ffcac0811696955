import { limitsFrom } from "../competitors/limits.js";
import { createCompetitorServices } from "../competitors/services.js";
import type { Config } from "../config.js";
import { createStores } from "../store/clients.js";
import { fetcherOf } from "./fetcher.js";
import { webhookEventsOf } from "./webhook-events.js";

/** competitor-check-worker: queued checks, with the configured (longer) limits. */
export function checkWorkerServices(config: Config) {
  const stores = createStores(config);
  return createCompetitorServices({
    table: stores.table,
    blobs: stores.blobs,
    fetcher: fetcherOf(config),
    limits: limitsFrom(config),
    webhooks: webhookEventsOf(config, stores),
  });
}
