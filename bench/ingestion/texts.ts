import { Corpus } from "../core/corpus.js";

/**
 * The text of source `i` of an import: a deterministic Markdown document of `bytes` characters,
 * the same in the figure (which posts it) and in the floor process (which chunks and indexes it).
 */
export const sourceText = (seed: number, i: number, bytes: number): string =>
  new Corpus(seed * 100_003 + i).document(bytes);
