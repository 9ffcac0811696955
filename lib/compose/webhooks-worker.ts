import type { Config } from "../config.js";
import { createStores } from "../store/clients.js";
import { WebhookDeliverer } from "../webhooks/delivery.js";
import { WebhookEndpoints } from "../webhooks/endpoints.js";
import { fetcherOf } from "./fetcher.js";

/** webhooks-worker: one signed attempt per message, through the safe fetcher. */
export function webhooksWorkerServices(config: Config) {
  const stores = createStores(config);
  return new WebhookDeliverer({
    endpoints: new WebhookEndpoints(stores.table),
    queue: stores.webhooksQueue,
    poster: fetcherOf(config),
    retrySeconds: config.WEBHOOK_RETRY_SECONDS,
  });
}
