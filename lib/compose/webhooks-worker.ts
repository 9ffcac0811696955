import { Events, toPublic } from "../competitors/events.js";
import type { Config } from "../config.js";
import { createDataKeys, createStores } from "../store/clients.js";
import { createMailer } from "../store/mail.js";
import { WebhookDeliverer } from "../webhooks/delivery.js";
import { deliveryGate } from "../webhooks/delivery-gate.js";
import type { DigestSource } from "../webhooks/digest.js";
import { WebhookEndpoints } from "../webhooks/endpoints.js";
import { fetcherOf } from "./fetcher.js";

/**
 * webhooks-worker: one signed attempt per message, through the safe fetcher; an email endpoint's
 * digest through the mailer (SES, or the outbox folder locally).
 */
export function webhooksWorkerServices(config: Config) {
  const stores = createStores(config);
  const events = new Events(stores.table);
  const digests: DigestSource = async (workspaceId, period, limit) => {
    const page = await events.list(workspaceId, period, limit);
    return { events: page.items.map(toPublic), more: page.nextCursor !== null };
  };
  return new WebhookDeliverer({
    // Opens each endpoint's secret to sign with it (KMS Decrypt, its data keys cached briefly).
    endpoints: new WebhookEndpoints(stores.table, createDataKeys(config)),
    queue: stores.webhooksQueue,
    poster: fetcherOf(config),
    retrySeconds: config.WEBHOOK_RETRY_SECONDS,
    consoleUrl: config.CONSOLE_URL,
    mail: { mailer: createMailer(config), from: config.MAIL_FROM, digests },
    // One attempt per endpoint at a time, none while its circuit is open, a workspace its share.
    gate: deliveryGate(stores.table, stores.webhooksQueue, config.WEBHOOK_TIMEOUT_MS),
  });
}
