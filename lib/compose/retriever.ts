import type { Config } from "../config.js";
import { LiveSources } from "../knowledge/retrieval/live-sources.js";
import { IndexRetriever } from "../knowledge/retrieval/retrieval.js";
import type { Llm } from "../llm/provider.js";
import { createSearchIndex } from "../search/index.js";
import type { Stores } from "../store/clients.js";

/** Search over the persisted index, hybrid when an embedding model is configured. */
export function retrieverOf(config: Config, stores: Stores, llm: Llm) {
  return new IndexRetriever({
    index: createSearchIndex(config, stores.table),
    live: new LiveSources(stores.table),
    embedder: llm.embedder,
  });
}
