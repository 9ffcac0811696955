import type { WriterLock } from "../store/writer-lock.js";
import type { SearchLocation } from "./engine.js";

export interface SearchIndexOptions {
  location: SearchLocation;
  lock: WriterLock;
  /** Workspaces whose open tables are kept between searches (least recently used go first). */
  maxOpenWorkspaces?: number;
  /** Memory for the engine's cache of index pages, shared by every workspace. */
  indexCacheBytes?: number;
  /**
   * Chunks the recent table gathers before a write folds them into the chunks table (that many
   * at a time), and vectors written since a vector table's last optimize before a write
   * optimizes it (see `writeChunks`).
   */
  foldAfterRows?: number;
  /** Small data files after which a write compacts a vector table. */
  optimizeAfterFragments?: number;
  /** Vectors in a space after which the space gets an approximate (IVF-RaBitQ) index; flat below. */
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
   * longer ago than this. 0: on every search. It also bounds how old a version a reader holds,
   * far below the hour an optimize keeps old versions for.
   */
  readConsistencySeconds?: number;
}

/** The options with every default filled in: what the index's parts read. */
export type SearchSettings = Required<SearchIndexOptions>;

export function withDefaults(options: SearchIndexOptions): SearchSettings {
  return {
    maxOpenWorkspaces: 32,
    indexCacheBytes: 256 * 1024 * 1024,
    foldAfterRows: 2_000,
    optimizeAfterFragments: 64,
    vectorIndexAfterRows: 5_000,
    minSimilarity: 0.3,
    protectedLexical: 5,
    candidates: 50,
    readConsistencySeconds: 10,
    prewarmMaxRows: 200_000,
    ...options,
  };
}
