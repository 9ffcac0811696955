import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { webhooksWorkerServices } from "../lib/compose/webhooks-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { recordHandler, WebhookMessage } from "../lib/store/queue.js";

const deliverer = webhooksWorkerServices(loadConfig());
const deliverRecord = recordHandler(WebhookMessage, (message, delivery) =>
  deliverer.handle(message, delivery),
);

/**
 * SQS-triggered: one signed attempt to deliver a webhook event per record. A failed attempt queues
 * the next one itself; after the last, the record fails and goes on to the dead-letter queue.
 */
export const handler: SQSHandler = invocation(async (event, context) =>
  processPartialResponse(event, deliverRecord, new BatchProcessor(EventType.SQS), { context }),
);
