import type { Config } from "../config.js";
import { Passages } from "../knowledge/indexing/passages.js";
import { LiveSources } from "../knowledge/retrieval/live-sources.js";
import { Reranker } from "../knowledge/retrieval/reranker.js";
import { IndexRetriever } from "../knowledge/retrieval/retrieval.js";
import type { Llm } from "../llm/provider.js";
import { createSearchIndex } from "../search/index.js";
import type { Stores } from "../store/clients.js";

/** The reranker a configuration sets (RERANK_MODEL), or none. */
export function rerankerOf(config: Config): Reranker | undefined {
  const baseUrl = config.RERANK_BASE_URL ?? config.OPENAI_BASE_URL;
  if (!config.RERANK_MODEL || !baseUrl) return undefined;
  return new Reranker({
    model: config.RERANK_MODEL,
    baseUrl,
    apiKey: config.RERANK_API_KEY ?? config.OPENAI_API_KEY,
    timeoutMs: config.RERANK_TIMEOUT_MS,
    candidates: config.RERANK_CANDIDATES,
  });
}

/**
 * Search over the persisted index, hybrid when an embedding model is configured, reranked when a
 * reranker is, with each hit placed in its source's stored text.
 */
export function retrieverOf(config: Config, stores: Stores, llm: Llm) {
  return new IndexRetriever({
    index: createSearchIndex(config, stores.table),
    live: new LiveSources(stores.table),
    embedder: llm.embedder,
    passages: new Passages(stores.blobs),
    reranker: rerankerOf(config),
  });
}
