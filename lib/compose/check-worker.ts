import { limitsFrom } from "../competitors/limits.js";
import { createCompetitorServices } from "../competitors/services.js";
import { type Config, quotaLimits } from "../config.js";
import { Quotas } from "../limits/quotas.js";
import { createStores } from "../store/clients.js";
import { briefWriterOf } from "./briefs.js";
import { fetcherOf } from "./fetcher.js";
import { webhookEventsOf } from "./webhook-events.js";

/**
 * competitor-check-worker: queued checks, with the configured (longer) limits, and the model's
 * briefs (taken from the workspace's model-call quota) when a model is configured.
 */
export function checkWorkerServices(config: Config) {
  const stores = createStores(config);
  const briefWriter = briefWriterOf(
    config,
    stores.table,
    new Quotas(stores.table, quotaLimits(config)),
  );
  return createCompetitorServices({
    table: stores.table,
    blobs: stores.blobs,
    fetcher: fetcherOf(config),
    limits: limitsFrom(config),
    ...(briefWriter ? { briefWriter } : {}),
    webhooks: webhookEventsOf(config, stores),
  });
}
