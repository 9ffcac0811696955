import type { ScheduledHandler } from "aws-lambda";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { logger } from "../lib/log.js";
import { createStores } from "../lib/store/clients.js";
import { queueDigests } from "../lib/webhooks/digest-schedule.js";
import { WebhookEndpoints } from "../lib/webhooks/endpoints.js";

const config = loadConfig();
const { table, webhooksQueue } = createStores(config);
// Reads the digest index only: no secret is opened here (the webhooks worker opens recipients).
const endpoints = new WebhookEndpoints(table);

/**
 * Scheduled (hourly): queues one email digest per endpoint due this hour (daily ones at
 * DIGEST_HOUR UTC, weekly ones on Mondays then) for the webhooks worker, which renders and sends
 * it with a webhook delivery's retries and log (docs/webhooks.md#email-digests).
 */
export const handler: ScheduledHandler = invocation(async (event) => {
  // The hour the run was scheduled for, not when it started: a late start covers the same period.
  const at = new Date(Date.parse(event.time) || Date.now());
  const queued = await queueDigests(endpoints, webhooksQueue, at, config.DIGEST_HOUR);
  logger.info("competitor digests", { queued, at: at.toISOString() });
});
