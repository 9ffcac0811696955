import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { crawlWorkerServices } from "../lib/compose/crawl-worker.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { CrawlMessage, recordHandler } from "../lib/store/queue.js";

const crawler = crawlWorkerServices(loadConfig());
const crawlRecord = recordHandler(CrawlMessage, (message, delivery) =>
  crawler.handle(message, delivery),
);

/** SQS-triggered: crawls one page per message, and watches running crawls; failures fail alone. */
export const handler: SQSHandler = invocation(async (event, context) =>
  processPartialResponse(event, crawlRecord, new BatchProcessor(EventType.SQS), { context }),
);
