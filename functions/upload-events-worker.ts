import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { uploadServices } from "../lib/compose/uploads.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { createdKeys } from "../lib/knowledge/uploads/events.js";
import { logger } from "../lib/log.js";
import { recordHandler, UploadEvent } from "../lib/store/queue.js";

const { uploads } = uploadServices(loadConfig());

const handleRecord = recordHandler(UploadEvent, async (notification) => {
  for (const key of createdKeys(notification)) {
    const outcome = await uploads.complete(key);
    logger.info("object created", { key, outcome });
  }
});

/**
 * SQS-triggered by the bucket's ObjectCreated notifications: an arrived presigned upload is
 * checked and queued for indexing. A record that fails (not an S3 notification, an outage)
 * fails alone and is retried, then dead-lettered.
 */
export const handler: SQSHandler = invocation(async (event, context) =>
  processPartialResponse(event, handleRecord, new BatchProcessor(EventType.SQS), { context }),
);
