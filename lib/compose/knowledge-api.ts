import type { Config } from "../config.js";
import { Crawls } from "../knowledge/crawl/crawls.js";
import { Sources } from "../knowledge/sources/sources.js";
import { Uploads, uploadSettings } from "../knowledge/uploads/uploads.js";
import { createLlm } from "../llm/provider.js";
import { toLlmSettings } from "../llm/settings.js";
import { apiBase } from "./api.js";
import { retrieverOf } from "./retriever.js";

/** knowledge-api: sources, search, crawls and uploads. */
export function knowledgeServices(config: Config) {
  const shared = apiBase(config);
  const { stores } = shared;
  const sources = new Sources(stores);
  return {
    ...shared,
    sources,
    crawls: new Crawls({
      table: stores.table,
      queue: stores.crawlQueue,
      watchSeconds: config.CRAWL_WATCH_SECONDS,
    }),
    uploads: new Uploads({ ...stores, sources }, uploadSettings(config)),
    retriever: retrieverOf(config, stores, createLlm(toLlmSettings(config))),
  };
}
