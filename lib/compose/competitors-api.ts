import { API_CHECK_LIMITS } from "../competitors/check.js";
import { createCompetitorServices } from "../competitors/services.js";
import type { Config } from "../config.js";
import { apiBase } from "./api.js";
import { fetcherOf } from "./fetcher.js";
import { webhookEventsOf } from "./webhook-events.js";

/**
 * competitors-api: tracked competitors, checks and events. Built from the stores alone: the model
 * client and search of the other API functions would more than double its bundle.
 */
export function competitorServices(config: Config) {
  const shared = apiBase(config);
  return {
    ...shared,
    ...createCompetitorServices({
      table: shared.stores.table,
      blobs: shared.stores.blobs,
      fetcher: fetcherOf(config),
      limits: API_CHECK_LIMITS,
      webhooks: webhookEventsOf(config, shared.stores),
    }),
  };
}
