import type { Config } from "../config.js";
import { fileLoader } from "../knowledge/indexing/file-loader.js";
import { Indexer, textLoader } from "../knowledge/indexing/indexer.js";
import { urlLoader, urlRefresher } from "../knowledge/indexing/url-loader.js";
import { createSearchIndex } from "../search/index.js";
import { createStores } from "../store/clients.js";
import { fetcherOf } from "./fetcher.js";
import { llmOf } from "./llm.js";
import { rendererOf } from "./renderer.js";
import { webhookEventsOf } from "./webhook-events.js";

/** index-worker: the indexer, with a loader per source type, embeddings and the search index. */
export function indexWorkerServices(config: Config) {
  const stores = createStores(config);
  const { table, blobs } = stores;
  const fetcher = fetcherOf(config);
  const renderer = rendererOf(config, fetcher);
  return new Indexer({
    table,
    blobs,
    chunking: { size: config.CHUNK_SIZE, overlap: config.CHUNK_OVERLAP },
    loaders: {
      text: textLoader(blobs),
      url: urlLoader({ fetcher, blobs, renderer }),
      file: fileLoader(blobs),
    },
    refresher: urlRefresher({ fetcher, blobs, renderer }),
    embedder: llmOf(config).embedder,
    search: createSearchIndex(config, table),
    events: webhookEventsOf(config, stores),
  });
}
