import type { Engine } from "./engine.js";
import { indexedTerms } from "./terms.js";

/**
 * What the index stores: the search module's own row types, independent of the knowledge domain
 * that feeds it. A workspace's rows come in families: its chunks (text, searched lexically), and
 * the vectors of each embedding space (`vectors_<space>`), so spaces never mix and lexical search
 * needs no embeddings. Each family is a recent table and segments (see `tiers.ts`), listed in the
 * workspace's registry (`segments.ts`).
 */

/** A source as the index knows it: what its rows are filtered by. */
export interface IndexedSource {
  id: string;
  type: string;
  crawlId: string | null;
}

export interface IndexedChunk {
  chunkIndex: number;
  text: string;
  heading: string | null;
  page: number | null;
}

/** A source's embeddings in one space: one vector per chunk, in the order of its chunks. */
export interface SourceVectors {
  space: string;
  vectors: ReadonlyArray<Float32Array | readonly number[]>;
}

/** Everything the index holds for one source. */
export interface SourceDocument {
  source: IndexedSource;
  chunks: readonly IndexedChunk[];
  vectors?: SourceVectors;
}

export const CHUNKS_FAMILY = "chunks";
const VECTORS_PREFIX = "vectors_";
/** The registry of the workspace's tables (see `segments.ts`). */
export const SEGMENTS_TABLE = "segments";
/** The registry of vector tables of the layout before `segments`, read to carry it over. */
export const LEGACY_SPACES_TABLE = "spaces";

/** A table of the workspace's registry (see `segments.ts`). */
export interface Segment {
  /** The table's name in the workspace's database. */
  name: string;
  /** `chunks`, or `vectors_<space>`. */
  family: string;
  /** `RECENT_LEVEL` for the recent table; 0 and up for segments, by their rows (see `levelOf`). */
  level: number;
  /** Rows when it was written (deletes since are not counted). */
  rows: number;
  /**
   * The sources it was written with, sorted: a write deletes a source's rows only from the
   * segments that list it, so writing a new source costs no segment a commit. Empty for the
   * recent table, which a write always replaces its sources in.
   */
  sources: string[];
  /** When a merge replaced it (ms since the epoch), or 0 while it serves searches. */
  retiredAt: number;
}

/** The registry as one version of it lists it; `sources` is read only when a writer asks. */
export interface Registry {
  segments: readonly Segment[];
  /** The registry table's version it was read at; undefined when there is none yet. */
  version: number | undefined;
}

/** A family's mutable table, which every write goes to. */
export const recentTable = (family: string) => `recent_${family}`;

/** Whether a family holds vectors (else chunks). */
export const isVectorFamily = (family: string) => family.startsWith(VECTORS_PREFIX);
const SPACE = /^[A-Za-z0-9_]{1,64}$/;

/** The family of an embedding space; the space is a short name (letters, digits, `_`). */
export function vectorsFamily(space: string): string {
  if (!SPACE.test(space)) throw new Error(`Invalid embedding space name: ${JSON.stringify(space)}`);
  return `${VECTORS_PREFIX}${space}`;
}

/** The full-text indexes: the words of the text and of the heading, each its own index. */
export const TEXT_TERMS = "terms";
export const HEADING_TERMS = "heading_terms";
export const INDEXED_COLUMNS = [TEXT_TERMS, HEADING_TERMS] as const;

/** The name of a column's index (`id_idx`, `terms_idx`, `vector_idx`, …). */
export const indexName = (column: string) => `${column}_idx`;

export interface ChunkRow {
  /** `${source_id}#${chunk_index}` */
  id: string;
  source_id: string;
  type: string;
  /** Empty when the source came from no crawl. */
  crawl_id: string;
  chunk_index: number;
  text: string;
  heading: string | null;
  page: number | null;
  [TEXT_TERMS]: string;
  [HEADING_TERMS]: string;
}

export interface VectorRow {
  id: string;
  source_id: string;
  type: string;
  crawl_id: string;
  vector: Float32Array | readonly number[];
}

export const chunkId = (sourceId: string, chunkIndex: number) => `${sourceId}#${chunkIndex}`;

export function chunkRows({ source, chunks }: SourceDocument): ChunkRow[] {
  return chunks.map((chunk) => ({
    id: chunkId(source.id, chunk.chunkIndex),
    source_id: source.id,
    type: source.type,
    crawl_id: source.crawlId ?? "",
    chunk_index: chunk.chunkIndex,
    text: chunk.text,
    heading: chunk.heading,
    page: chunk.page,
    [TEXT_TERMS]: indexedTerms(chunk.text),
    [HEADING_TERMS]: indexedTerms(chunk.heading),
  }));
}

export function vectorRows({ source, chunks, vectors }: SourceDocument): VectorRow[] {
  if (!vectors) return [];
  if (vectors.vectors.length !== chunks.length) {
    throw new Error(
      `Source ${source.id}: ${vectors.vectors.length} vectors for ${chunks.length} chunks`,
    );
  }
  return chunks.map((chunk, i) => ({
    id: chunkId(source.id, chunk.chunkIndex),
    source_id: source.id,
    type: source.type,
    crawl_id: source.crawlId ?? "",
    vector: vectors.vectors[i] as Float32Array | readonly number[],
  }));
}

export function chunkSchema({ arrow }: Engine) {
  const { Field, Int32, Schema, Utf8 } = arrow;
  return new Schema([
    new Field("id", new Utf8(), false),
    new Field("source_id", new Utf8(), false),
    new Field("type", new Utf8(), false),
    new Field("crawl_id", new Utf8(), false),
    new Field("chunk_index", new Int32(), false),
    new Field("text", new Utf8(), false),
    new Field("heading", new Utf8(), true),
    new Field("page", new Int32(), true),
    new Field(TEXT_TERMS, new Utf8(), false),
    new Field(HEADING_TERMS, new Utf8(), false),
  ]);
}

export function vectorSchema({ arrow }: Engine, dimensions: number) {
  const { Field, FixedSizeList, Float32, Schema, Utf8 } = arrow;
  return new Schema([
    new Field("id", new Utf8(), false),
    new Field("source_id", new Utf8(), false),
    new Field("type", new Utf8(), false),
    new Field("crawl_id", new Utf8(), false),
    new Field(
      "vector",
      new FixedSizeList(dimensions, new Field("item", new Float32(), true)),
      false,
    ),
  ]);
}
