import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { indexWorkerServices } from "../lib/compose/index-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { IndexMessage, recordHandler } from "../lib/store/queue.js";

const indexer = indexWorkerServices(loadConfig());
const indexRecord = recordHandler(IndexMessage, (message, delivery) =>
  indexer.handle(message, delivery),
);

/** SQS-triggered: indexes knowledge sources; a failing record fails alone (partial batch response). */
export const handler: SQSHandler = invocation(async (event, context) =>
  processPartialResponse(event, indexRecord, new BatchProcessor(EventType.SQS), { context }),
);
