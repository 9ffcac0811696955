import { API_CHECK_LIMITS } from "../competitors/check.js";
import { createCompetitorServices } from "../competitors/services.js";
import type { Config } from "../config.js";
import { apiBase } from "./api-base.js";
import { briefWriterOf } from "./briefs.js";
import { fetcherOf } from "./fetcher.js";
import { rendererOf } from "./renderer.js";
import { webhookEventsOf } from "./webhook-events.js";

/**
 * competitors-api: tracked competitors, checks and events, with the model's briefs when a model is
 * configured. Built without search and the intel modules, which would double its bundle.
 */
export function competitorServices(config: Config) {
  const shared = apiBase(config);
  const fetcher = fetcherOf(config);
  const briefWriter = briefWriterOf(config, shared.stores.table, shared.quotas);
  return {
    ...shared,
    ...createCompetitorServices({
      table: shared.stores.table,
      blobs: shared.stores.blobs,
      fetcher,
      renderer: rendererOf(config, fetcher),
      limits: API_CHECK_LIMITS,
      ...(briefWriter ? { briefWriter } : {}),
      webhooks: webhookEventsOf(config, shared.stores),
      caps: shared.caps,
      retentionDays: config.SNAPSHOT_RETENTION_DAYS,
    }),
  };
}
