import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { workerFairShare } from "../lib/compose/fair-share.js";
import { indexWorkerServices } from "../lib/compose/index-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { invocationShare } from "../lib/limits/fair-share.js";
import { createStores } from "../lib/store/clients.js";
import { IndexMessage, recordHandler } from "../lib/store/queue.js";

const config = loadConfig();
const indexer = indexWorkerServices(config);
const { table, indexQueue } = createStores(config);
// A workspace's share of the worker, counted in invocations: its sources over it wait in the
// queue (docs/operations.md#capacity).
const { share, leaseMs } = workerFairShare(config, table, indexQueue, "index");

/** SQS-triggered: indexes knowledge sources; a failing record fails alone (partial batch response). */
export const handler: SQSHandler = invocation(async (event, context) => {
  const inShare = invocationShare(share, leaseMs);
  const indexRecord = recordHandler(IndexMessage, (message, delivery) =>
    inShare(message, () => indexer.handle(message, delivery)),
  );
  return processPartialResponse(event, indexRecord, new BatchProcessor(EventType.SQS), {
    context,
  });
});
