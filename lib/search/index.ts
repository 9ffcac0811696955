/**
 * `lib/search` owns the search engine behind one small interface: index a source's chunks (and
 * their vectors), delete a source, and query a workspace with filters. The engine is LanceDB,
 * embedded, with its data on local disk (`<DATA_DIR>/search` locally) or in S3
 * (`s3://<bucket>/search`): a persisted full-text index and vector tables that a fresh process
 * opens in milliseconds instead of rebuilding an index from every chunk set. Each workspace is its
 * own database under `<base>/<workspaceId>/`, so a query names one workspace and can open nothing
 * else. Its rows live in tiers (`tiers.ts`): a small recent table that every write replaces its
 * sources in, and immutable segments merged geometrically, so a write costs the source and not
 * the corpus. Writes run under a per-workspace writer lock (`WriterLock`), because on S3 without
 * conditional writes two concurrent commits can silently lose one. It knows nothing of sources' records, enablement or embeddings models: the
 * knowledge domain passes in rows, filters and query vectors, and data never flows back.
 *
 * Code outside the folder imports this file, which lists its public surface. One exception: the
 * knowledge API's contract imports `terms.ts` alone, so that the functions that bundle it without
 * searching (docs-api) do not bundle the engine.
 */

export {
  DynamoWriterLock,
  type LeaseOptions,
  type WriterLock,
  WriterLockLost,
  WriterLockTimeout,
} from "../store/writer-lock.js";
export { createSearchIndex } from "./config.js";
export type { S3Endpoint, SearchLocation } from "./engine.js";
export type { SearchFilters } from "./filters.js";
export type { SearchIndexOptions } from "./options.js";
export type { SearchHit, SearchQuery } from "./query.js";
export type { IndexedChunk, IndexedSource, SourceDocument, SourceVectors } from "./rows.js";
export { BM25_HALF } from "./scores.js";
export { SearchIndex } from "./search-index.js";
export { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, tokenize } from "./terms.js";
