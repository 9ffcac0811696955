import { Competitors } from "./competitors/competitors.js";
import { Events } from "./competitors/events.js";
import { type Config, quotaLimits } from "./config.js";
import { apiGuards } from "./http/guards.js";
import { Artifacts } from "./intel/artifacts.js";
import { BrandProfiles } from "./intel/brand.js";
import { GroundedChat } from "./intel/chat.js";
import { CompetitorIntel } from "./intel/competitor-context.js";
import { IntelGenerator } from "./intel/generate.js";
import { Crawls } from "./knowledge/crawl/crawls.js";
import { LiveSources } from "./knowledge/retrieval/live-sources.js";
import { IndexRetriever } from "./knowledge/retrieval/retrieval.js";
import { Sources } from "./knowledge/sources/sources.js";
import { Uploads, uploadSettings } from "./knowledge/uploads/uploads.js";
import { Quotas } from "./limits/quotas.js";
import { createLlm, type Llm } from "./llm/provider.js";
import { toLlmSettings } from "./llm/settings.js";
import { createSearchIndex } from "./search/config.js";
import { createStores, type Stores } from "./store/clients.js";

/**
 * The composition root: what each API function is built from, from its configuration, once per
 * process. One builder per function, so a function's bundle holds only what it serves (the
 * knowledge API carries no intel modules, prompts or chat).
 */

/** What every API function shares: stores, auth and rate limit, quotas. */
function base(config: Config) {
  const stores = createStores(config);
  return {
    config,
    stores,
    guards: apiGuards(stores.table, config),
    quotas: new Quotas(stores.table, quotaLimits(config)),
  };
}

/** Search over the persisted index, hybrid when an embedding model is configured. */
function retrieverOf(config: Config, stores: Stores, llm: Llm) {
  return new IndexRetriever({
    index: createSearchIndex(config, stores.table),
    live: new LiveSources(stores.table),
    embedder: llm.embedder,
  });
}

/** knowledge-api: sources, search, crawls and uploads. */
export function knowledgeServices(config: Config) {
  const shared = base(config);
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

/** intel-api: brand profile, grounded chat, intel modules and artifacts. */
export function intelServices(config: Config) {
  const shared = base(config);
  const { stores, quotas } = shared;
  const llm = createLlm(toLlmSettings(config));
  const retriever = retrieverOf(config, stores, llm);
  const brands = new BrandProfiles(stores.table);
  return {
    ...shared,
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
