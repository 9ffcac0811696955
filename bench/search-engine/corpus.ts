import type { SourceDocument } from "../../lib/search/index.js";
import { Corpus, prng } from "../core/corpus.js";

/**
 * A level's synthetic knowledge base: sources of 100 chunks of about 850 characters (the chunker's
 * output for prose at its default size), Zipf-distributed words from `bench/core/corpus.ts`, a
 * heading shared by every 8 chunks as a document's sections share one. Generated a batch of
 * sources at a time, so a million chunks never sit in memory at once; the same level always gives
 * the same text and vectors.
 */

export const CHUNKS_PER_SOURCE = 100;
const CHUNKS_PER_SECTION = 8;
/** Sources written in one call (one commit per table): 10,000 chunks. */
export const SOURCES_PER_BATCH = 100;

export interface Vectors {
  space: string;
  dimensions: number;
}

/** A random unit vector: no structure to exploit, so an index has to work for its answer. */
export function randomVector(random: () => number, dimensions: number): Float32Array {
  const vector = Float32Array.from({ length: dimensions }, () => random() * 2 - 1);
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
}

export const sourceId = (level: number, i: number) => `kb_${level}_${String(i).padStart(6, "0")}`;

export function* batches(chunks: number, vectors?: Vectors): Generator<SourceDocument[]> {
  const corpus = new Corpus(chunks);
  const random = prng(chunks);
  const sources = Math.ceil(chunks / CHUNKS_PER_SOURCE);
  for (let first = 0; first < sources; first += SOURCES_PER_BATCH) {
    const batch: SourceDocument[] = [];
    for (let s = first; s < Math.min(sources, first + SOURCES_PER_BATCH); s++) {
      batch.push(source(corpus, random, sourceId(chunks, s), s, vectors));
    }
    yield batch;
  }
}

/** One source; every tenth is a crawled page, so type and crawl filters have something to do. */
export function source(
  corpus: Corpus,
  random: () => number,
  id: string,
  s: number,
  vectors?: Vectors,
): SourceDocument {
  let heading = "";
  const chunks = Array.from({ length: CHUNKS_PER_SOURCE }, (_, chunkIndex) => {
    if (chunkIndex % CHUNKS_PER_SECTION === 0) heading = corpus.heading();
    return { chunkIndex, text: corpus.paragraph(850), heading, page: null };
  });
  return {
    source: { id, type: s % 10 === 0 ? "url" : "text", crawlId: s % 10 === 0 ? "crawl_1" : null },
    chunks,
    ...(vectors
      ? {
          vectors: {
            space: vectors.space,
            vectors: chunks.map(() => randomVector(random, vectors.dimensions)),
          },
        }
      : {}),
  };
}
