import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { limiter } from "../lib/async.js";
import { runQueuedCheck } from "../lib/competitors/sweep.js";
import { checkWorkerServices } from "../lib/compose/check-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { CheckMessage, recordHandler } from "../lib/store/queue.js";

const config = loadConfig();
const { competitors, checker } = checkWorkerServices(config);

/** Bounds the checks of one invocation (and of the local runtime's overlapping batches). */
const slot = limiter(config.CHECK_CONCURRENCY);

const checkRecord = recordHandler(CheckMessage, (message) =>
  slot(() => runQueuedCheck(checker, competitors, message)),
);

/** SQS-triggered: checks competitors' sites for changes; a failing record fails alone. */
export const handler: SQSHandler = invocation(async (event, context) =>
  processPartialResponse(event, checkRecord, new BatchProcessor(EventType.SQS), { context }),
);
