import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { crawlWorkerServices } from "../lib/compose/crawl-worker.js";
import { workerFairShare } from "../lib/compose/fair-share.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { invocationShare } from "../lib/limits/fair-share.js";
import { createStores } from "../lib/store/clients.js";
import { CrawlMessage, recordHandler } from "../lib/store/queue.js";

const config = loadConfig();
const crawler = crawlWorkerServices(config);
const { table, crawlQueue } = createStores(config);
// A workspace's share of the worker, counted in invocations: its pages over it wait in the queue;
// a crawl's watch, cheap and bounded, takes no slot (docs/operations.md#capacity).
const { share, leaseMs } = workerFairShare(config, table, crawlQueue, "crawl");

/** SQS-triggered: crawls one page per message, and watches running crawls; failures fail alone. */
export const handler: SQSHandler = invocation(async (event, context) => {
  const inShare = invocationShare(share, leaseMs);
  const crawlRecord = recordHandler(CrawlMessage, (message, delivery) =>
    message.kind === "crawl-watch"
      ? crawler.handle(message, delivery)
      : inShare(message, () => crawler.handle(message, delivery)),
  );
  return processPartialResponse(event, crawlRecord, new BatchProcessor(EventType.SQS), {
    context,
  });
});
