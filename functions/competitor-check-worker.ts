import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { limiter } from "../lib/async.js";
import { limitsFrom } from "../lib/competitors/limits.js";
import { createCompetitorServices } from "../lib/competitors/services.js";
import { runQueuedCheck } from "../lib/competitors/sweep.js";
import { loadConfig } from "../lib/config.js";
import { createStores } from "../lib/store/clients.js";
import { CheckMessage, recordHandler } from "../lib/store/queue.js";
import { SafeFetcher } from "../lib/web/fetch.js";

const config = loadConfig();
const { table, blobs } = createStores(config);
const { competitors, checker } = createCompetitorServices({
  table,
  blobs,
  fetcher: new SafeFetcher({ allowPrivate: config.ALLOW_PRIVATE_URLS }),
  limits: limitsFrom(config),
});

/** Bounds the checks of one invocation (and of the local runtime's overlapping batches). */
const slot = limiter(config.CHECK_CONCURRENCY);
const processor = new BatchProcessor(EventType.SQS);

const checkRecord = recordHandler(CheckMessage, (message) =>
  slot(() => runQueuedCheck(checker, competitors, message)),
);

/** SQS-triggered: checks competitors' sites for changes; a failing record fails alone. */
export const handler: SQSHandler = async (event, context) =>
  processPartialResponse(event, checkRecord, processor, { context });
