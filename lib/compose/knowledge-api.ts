import type { Config } from "../config.js";
import { Crawls } from "../knowledge/crawl/crawls.js";
import { Sources } from "../knowledge/sources/sources.js";
import { Uploads, uploadSettings } from "../knowledge/uploads/uploads.js";
import { apiBase } from "./api-base.js";
import { llmOf } from "./llm.js";
import { retrieverOf } from "./retriever.js";
import { webhookEventsOf } from "./webhook-events.js";

/** knowledge-api: sources, search, crawls and uploads. */
export function knowledgeServices(config: Config) {
  const shared = apiBase(config);
  const { stores, caps } = shared;
  const sources = new Sources({ ...stores, caps });
  return {
    ...shared,
    sources,
    crawls: new Crawls({
      table: stores.table,
      queue: stores.crawlQueue,
      watchSeconds: config.CRAWL_WATCH_SECONDS,
      events: webhookEventsOf(config, stores),
    }),
    uploads: new Uploads({ ...stores, sources, caps }, uploadSettings(config)),
    retriever: retrieverOf(config, stores, llmOf(config)),
  };
}
