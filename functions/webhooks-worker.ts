import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { webhooksWorkerServices } from "../lib/compose/webhooks-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { recordHandler, WebhookMessage } from "../lib/store/queue.js";

const deliverer = webhooksWorkerServices(loadConfig());

/**
 * SQS-triggered: one signed attempt to deliver a webhook event per record. A failed attempt queues
 * the next one itself; after the last, the record fails and goes on to the dead-letter queue. The
 * batch's records run at once, each waiting only on its own endpoint; those of one endpoint take
 * turns, and none starts an attempt it could not finish within the invocation's time.
 */
export const handler: SQSHandler = invocation(async (event, context) => {
  const deliver = deliverer.invocation(Date.now() + context.getRemainingTimeInMillis());
  const deliverRecord = recordHandler(WebhookMessage, deliver);
  return processPartialResponse(event, deliverRecord, new BatchProcessor(EventType.SQS), {
    context,
  });
});
