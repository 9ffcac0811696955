import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSHandler } from "aws-lambda";
import { loadConfig } from "../lib/config.js";
import { fileLoader } from "../lib/knowledge/indexing/file-loader.js";
import { Indexer, textLoader } from "../lib/knowledge/indexing/indexer.js";
import { urlLoader } from "../lib/knowledge/indexing/url-loader.js";
import { createLlm } from "../lib/llm/provider.js";
import { toLlmSettings } from "../lib/llm/settings.js";
import { createSearchIndex } from "../lib/search/config.js";
import { createStores } from "../lib/store/clients.js";
import { IndexMessage, recordHandler } from "../lib/store/queue.js";
import { SafeFetcher } from "../lib/web/fetch.js";

const config = loadConfig();
const { table, blobs } = createStores(config);
const indexer = new Indexer({
  table,
  blobs,
  chunking: { size: config.CHUNK_SIZE, overlap: config.CHUNK_OVERLAP },
  loaders: {
    text: textLoader(blobs),
    url: urlLoader({
      fetcher: new SafeFetcher({ allowPrivate: config.ALLOW_PRIVATE_URLS }),
      blobs,
    }),
    file: fileLoader(blobs),
  },
  embedder: createLlm(toLlmSettings(config)).embedder,
  search: createSearchIndex(config, table),
});

const processor = new BatchProcessor(EventType.SQS);
const indexRecord = recordHandler(IndexMessage, (message, delivery) =>
  indexer.handle(message, delivery),
);

/** SQS-triggered: indexes knowledge sources; a failing record fails alone (partial batch response). */
export const handler: SQSHandler = async (event, context) =>
  processPartialResponse(event, indexRecord, processor, { context });
