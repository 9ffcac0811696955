import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { loadConfig } from "../lib/config.js";
import { Crawler } from "../lib/knowledge/crawl/crawler.js";
import { Sources } from "../lib/knowledge/sources/sources.js";
import { createStores } from "../lib/store/clients.js";
import { CrawlMessage, recordHandler } from "../lib/store/queue.js";
import { SafeFetcher } from "../lib/web/fetch.js";
import { PoliteSession } from "../lib/web/session.js";

const config = loadConfig();
const stores = createStores(config);
const fetcher = new SafeFetcher({ allowPrivate: config.ALLOW_PRIVATE_URLS });
const crawler = new Crawler({
  table: stores.table,
  blobs: stores.blobs,
  queue: stores.crawlQueue,
  sources: new Sources(stores),
  fetcher,
  session: new PoliteSession(fetcher, { politenessMs: config.CRAWL_POLITENESS_MS }),
  stallMs: config.CRAWL_STALL_SECONDS * 1000,
  watchSeconds: config.CRAWL_WATCH_SECONDS,
});

const processor = new BatchProcessor(EventType.SQS);
const crawlRecord = recordHandler(CrawlMessage, (message, delivery) =>
  crawler.handle(message, delivery),
);

/** SQS-triggered: crawls one page per message, and watches running crawls; failures fail alone. */
export const handler: SQSHandler = async (event, context) =>
  processPartialResponse(event, crawlRecord, processor, { context });
