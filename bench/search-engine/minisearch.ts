import type { Options } from "minisearch";
import { tokenize } from "../../lib/search/index.js";

/**
 * The peer candidate: today's in-memory BM25 index (MiniSearch, configured as
 * the retired in-memory retriever configured it), persisted as one JSON snapshot that a fresh process
 * downloads and loads (`MiniSearch.loadJSON`) instead of rebuilding it from every chunk set.
 */

export interface SnapshotChunk {
  id: string;
  text: string;
  heading: string | null;
}

export const MINISEARCH_OPTIONS: Options<SnapshotChunk> = {
  fields: ["text", "heading"],
  storeFields: ["text", "heading"],
  tokenize,
  processTerm: (term) => term.toLocaleLowerCase() || null,
  searchOptions: { boost: { heading: 1.5 }, fuzzy: 0, combineWith: "OR" },
};
