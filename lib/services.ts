import { Competitors } from "./competitors/competitors.js";
import { Events } from "./competitors/events.js";
import { type Config, quotaLimits } from "./config.js";
import { apiGuards } from "./http/guards.js";
import { Artifacts } from "./intel/artifacts.js";
import { BrandProfiles } from "./intel/brand.js";
import { GroundedChat } from "./intel/chat.js";
import { CompetitorIntel } from "./intel/competitor-context.js";
import { IntelGenerator } from "./intel/generate.js";
import { Crawls } from "./knowledge/crawl.js";
import { LiveSources } from "./knowledge/live-sources.js";
import { IndexRetriever } from "./knowledge/retrieval.js";
import { Sources } from "./knowledge/sources.js";
import { Uploads, uploadSettings } from "./knowledge/uploads.js";
import { Quotas } from "./limits/quotas.js";
import { createLlm } from "./llm/provider.js";
import { toLlmSettings } from "./llm/settings.js";
import { createSearchIndex } from "./search/config.js";
import { createStores } from "./store/clients.js";

/** Everything the API functions need, built once per process from its configuration. */
export function createServices(config: Config) {
  const stores = createStores(config);
  const llm = createLlm(toLlmSettings(config));
  const retriever = new IndexRetriever({
    index: createSearchIndex(config, stores.table),
    live: new LiveSources(stores.table),
    embedder: llm.embedder,
  });
  const brands = new BrandProfiles(stores.table);
  const sources = new Sources(stores);
  const quotas = new Quotas(stores.table, quotaLimits(config));
  return {
    config,
    stores,
    llm,
    guards: apiGuards(stores.table, config),
    quotas,
    sources,
    crawls: new Crawls({
      table: stores.table,
      queue: stores.crawlQueue,
      watchSeconds: config.CRAWL_WATCH_SECONDS,
    }),
    uploads: new Uploads({ ...stores, sources }, uploadSettings(config)),
    retriever,
    brands,
    chat: new GroundedChat({ retriever, brands, llm: llm.chat, quotas }),
    intel: new IntelGenerator({
      retriever,
      brands,
      llm: llm.chat,
      competitors: new CompetitorIntel({
        competitors: new Competitors({ table: stores.table }),
        events: new Events(stores.table),
      }),
      quotas,
    }),
    artifacts: new Artifacts(stores.table),
  };
}

export type Services = ReturnType<typeof createServices>;
