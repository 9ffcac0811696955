import type { Config } from "../config.js";
import { createDataKeys, createStores } from "../store/clients.js";
import { WebhookDeliverer } from "../webhooks/delivery.js";
import { WebhookEndpoints } from "../webhooks/endpoints.js";
import { fetcherOf } from "./fetcher.js";

/** webhooks-worker: one signed attempt per message, through the safe fetcher. */
export function webhooksWorkerServices(config: Config) {
  const stores = createStores(config);
  return new WebhookDeliverer({
    // Opens each endpoint's secret to sign with it (KMS Decrypt, its data keys cached briefly).
    endpoints: new WebhookEndpoints(stores.table, createDataKeys(config)),
    queue: stores.webhooksQueue,
    poster: fetcherOf(config),
    retrySeconds: config.WEBHOOK_RETRY_SECONDS,
  });
}
