import { type Config, quotaLimits } from "./config.js";
import { apiGuards } from "./http/guards.js";
import { BrandProfiles } from "./intel/brand.js";
import { GroundedChat } from "./intel/chat.js";
import { Crawls } from "./knowledge/crawl.js";
import { HybridRetriever } from "./knowledge/hybrid.js";
import { LexicalRetriever } from "./knowledge/retrieval.js";
import { Sources } from "./knowledge/sources.js";
import { Uploads, uploadSettings } from "./knowledge/uploads.js";
import { Quotas } from "./limits/quotas.js";
import { createLlm } from "./llm/provider.js";
import { toLlmSettings } from "./llm/settings.js";
import { createStores } from "./store/clients.js";

/** Everything the API functions need, built once per process from its configuration. */
export function createServices(config: Config) {
  const stores = createStores(config);
  const llm = createLlm(toLlmSettings(config));
  const retriever = new HybridRetriever(
    {
      table: stores.table,
      blobs: stores.blobs,
      lexical: new LexicalRetriever(stores),
      embedder: llm.embedder,
    },
    { minSimilarity: config.EMBEDDING_MIN_SIMILARITY },
  );
  const brands = new BrandProfiles(stores.table);
  const sources = new Sources(stores);
  return {
    config,
    stores,
    llm,
    guards: apiGuards(stores.table, config),
    quotas: new Quotas(stores.table, quotaLimits(config)),
    sources,
    crawls: new Crawls({
      table: stores.table,
      queue: stores.crawlQueue,
      watchSeconds: config.CRAWL_WATCH_SECONDS,
    }),
    uploads: new Uploads({ ...stores, sources }, uploadSettings(config)),
    retriever,
    brands,
    chat: new GroundedChat({ retriever, brands, llm: llm.chat }),
  };
}

export type Services = ReturnType<typeof createServices>;
