import { CheckSlots } from "../competitors/check-slots.js";
import { limitsFrom } from "../competitors/limits.js";
import { createCompetitorServices } from "../competitors/services.js";
import { type Config, quotaLimits } from "../config.js";
import { Quotas } from "../limits/quotas.js";
import { createStores } from "../store/clients.js";
import { briefWriterOf } from "./briefs.js";
import { fetcherOf } from "./fetcher.js";
import { rendererOf } from "./renderer.js";
import { webhookEventsOf } from "./webhook-events.js";

/**
 * competitor-check-worker: queued checks, with the configured (longer) limits, and the model's
 * briefs (taken from the workspace's model-call quota) when a model is configured; each workspace's
 * check slots, and the checks queue that takes back a check over them.
 */
export function checkWorkerServices(config: Config) {
  const stores = createStores(config);
  const fetcher = fetcherOf(config);
  const briefWriter = briefWriterOf(
    config,
    stores.table,
    new Quotas(stores.table, quotaLimits(config)),
  );
  const services = createCompetitorServices({
    table: stores.table,
    blobs: stores.blobs,
    fetcher,
    renderer: rendererOf(config, fetcher),
    limits: limitsFrom(config),
    ...(briefWriter ? { briefWriter } : {}),
    webhooks: webhookEventsOf(config, stores),
    retentionDays: config.SNAPSHOT_RETENTION_DAYS,
  });
  // A workspace's share of the worker; a check over it goes back to the checks queue.
  const slots = new CheckSlots(stores.table, config.CHECK_WORKSPACE_SLOTS);
  return { ...services, slots, checksQueue: stores.checksQueue };
}
