import type { WriterLock } from "../store/writer-lock.js";
import type { SearchLocation } from "./engine.js";

export interface SearchIndexOptions {
  location: SearchLocation;
  lock: WriterLock;
  /**
   * Memory the workspaces kept open between searches may hold (connections and table handles, by
   * an estimate per table; least recently used go first).
   */
  openWorkspacesBytes?: number;
  /** Memory for the engine's cache of index pages, shared by every workspace. */
  indexCacheBytes?: number;
  /**
   * Rows a recent table gathers before a write seals them into a segment (see `tiers.ts`): a
   * write's cost is bounded by it.
   */
  foldAfterRows?: number;
  /**
   * A write of at least this many rows of a family (a large source, or several written together)
   * becomes a level-0 segment of its own instead of going through the recent table.
   */
  segmentWriteRows?: number;
  /** Segments of one level that are merged into one of the next. */
  mergeFactor?: number;
  /** Segments stop merging at this many rows: the largest merge, its time and memory. */
  maxSegmentRows?: number;
  /** Rows a merge or seal copies at a time (memory). */
  copyBatchRows?: number;
  /**
   * How long a table a merge replaced, and an old version of a recent table, are kept after they
   * stop being the latest: above `readConsistencySeconds`, the age of the oldest version a reader
   * may still hold.
   */
  versionGraceSeconds?: number;
  /** Vectors in a segment from which it gets an approximate (IVF-RaBitQ) index; flat below. */
  vectorIndexAfterRows?: number;
  /**
   * Chunk tables up to this many rows have their full-text indexes held whole in the engine's
   * cache (see `Prewarmer.warm`); larger ones are read from the store search by search.
   */
  prewarmMaxRows?: number;
  /** Cosine similarity below which a chunk is no vector match. */
  minSimilarity?: number;
  /** Lexical hits hybrid keeps at the top whatever the vectors say (see `fuse`). */
  protectedLexical?: number;
  /** Hits taken from each ranking before fusion. */
  candidates?: number;
  /**
   * How stale a search without a newer `generation` may be: an open table looks for a newer
   * version (a listing of the store, the slowest request of a search) when it was last checked
   * longer ago than this. 0: on every search. It also bounds how old a version a reader holds
   * (see `versionGraceSeconds`).
   */
  readConsistencySeconds?: number;
}

/** The options with every default filled in: what the index's parts read. */
export type SearchSettings = Required<SearchIndexOptions>;

export function withDefaults(options: SearchIndexOptions): SearchSettings {
  return {
    openWorkspacesBytes: 64 * 1024 * 1024,
    indexCacheBytes: 256 * 1024 * 1024,
    foldAfterRows: 2_000,
    segmentWriteRows: 1_000,
    mergeFactor: 4,
    maxSegmentRows: 500_000,
    copyBatchRows: 20_000,
    versionGraceSeconds: 15,
    vectorIndexAfterRows: 5_000,
    minSimilarity: 0.3,
    protectedLexical: 5,
    candidates: 50,
    readConsistencySeconds: 10,
    prewarmMaxRows: 200_000,
    ...options,
  };
}
