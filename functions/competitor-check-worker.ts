import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { limiter } from "../lib/async.js";
import { runQueuedCheck } from "../lib/competitors/sweep.js";
import { checkWorkerServices } from "../lib/compose/check-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { CheckMessage, recordHandler } from "../lib/store/queue.js";

const config = loadConfig();
const { competitors, checker, slots, checksQueue } = checkWorkerServices(config);

/**
 * SQS-triggered: checks competitors' sites for changes; a failing record fails alone. The checks
 * of one invocation share its own limiter (the batch size is the model's checks per invocation,
 * docs/operations.md#capacity), so the local runtime's overlapping invocations are as separate
 * as Lambda's; a workspace's share of them is kept by its check slots.
 */
export const handler: SQSHandler = invocation(async (event, context) => {
  const slot = limiter(config.CHECK_CONCURRENCY);
  const checkRecord = recordHandler(CheckMessage, (message) =>
    slot(() => runQueuedCheck({ checker, competitors, slots, queue: checksQueue }, message)),
  );
  return processPartialResponse(event, checkRecord, new BatchProcessor(EventType.SQS), {
    context,
  });
});
