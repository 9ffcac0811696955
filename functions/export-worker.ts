import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { exportWorkerServices } from "../lib/compose/export-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { ExportMessage, recordHandler } from "../lib/store/queue.js";
import { writeBundle } from "../lib/workspaces/export/bundle-writer.js";

const writer = exportWorkerServices(loadConfig());
const exportRecord = recordHandler(ExportMessage, (message, delivery) =>
  writeBundle(writer, message, delivery),
);

/**
 * SQS-triggered: writes an export's bundle, one time slice per message; a slice that does not
 * finish sends the message again to carry on from its checkpoint.
 */
export const handler: SQSHandler = invocation(async (event, context) =>
  processPartialResponse(event, exportRecord, new BatchProcessor(EventType.SQS), { context }),
);
