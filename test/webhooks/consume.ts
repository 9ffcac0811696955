import type { SQSBatchItemFailure } from "aws-lambda";
import { recordHandler, WebhookMessage } from "../../lib/store/queue.js";
import type { WebhookDeliverer } from "../../lib/webhooks/delivery.js";
import type { TestAws } from "../support/aws.js";
import { asWorker } from "../support/workers.js";

/**
 * Runs the webhooks queue's messages through a deliverer as the worker does: a record that
 * throws is reported as a batch item failure, so the queue retries it.
 */
export function consumeWebhooks(aws: TestAws, deliverer: () => WebhookDeliverer): void {
  const deliver = recordHandler(WebhookMessage, (m, d) => deliverer().handle(m, d), 3);
  aws.queues.consume(
    "webhooks",
    async (event) => {
      const batchItemFailures: SQSBatchItemFailure[] = [];
      for (const record of event.Records) {
        await deliver(record).catch(() =>
          batchItemFailures.push({ itemIdentifier: record.messageId }),
        );
      }
      return { batchItemFailures };
    },
    asWorker("webhooks-worker"),
  );
}
