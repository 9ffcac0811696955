import type { Config } from "../config.js";
import type { Stores } from "../store/clients.js";
import { WebhookEmitter } from "../webhooks/emitter.js";
import { WebhookEndpoints } from "../webhooks/endpoints.js";

/** How a function emits webhook events: one delivery queued per subscribed endpoint. */
export const webhookEventsOf = (config: Config, stores: Stores) =>
  new WebhookEmitter({
    endpoints: new WebhookEndpoints(stores.table),
    queue: stores.webhooksQueue,
    cacheSeconds: config.WEBHOOK_CACHE_SECONDS,
  });
