import type { Embedder, EmbeddingSpace } from "../../llm/embeddings.js";
import { spaceTag } from "../../llm/embeddings.js";
import type { Blobs } from "../../store/blobs.js";
import type { Chunk } from "./chunking.js";

/**
 * Vectors of a chunk set live in their own object beside it, one per embedding space:
 * `ws/{ws}/kb/{id}/vectors/{chunk-set hash}.{space tag}.bin`. Sources indexed before embeddings
 * were configured simply have none (they stay lexical), and after a change of model or size the
 * old vectors are never read, so vector spaces cannot mix. The chunk set JSON is unchanged, so
 * the lexical index does not pay for vectors it does not use.
 */
export function vectorsKey(chunksKey: string, space: EmbeddingSpace): string {
  const base = chunksKey.replace(/\.json$/, "").replace(/\/chunks\/([^/]+)$/, "/vectors/$1");
  return `${base}.${spaceTag(space)}.bin`;
}

/** The search index's name for an embedding space: its tag in the characters a table name takes. */
export const indexSpace = (space: EmbeddingSpace) => spaceTag(space).replace(/[^A-Za-z0-9_]/g, "_");

const MAGIC = 0x3156424b; // "KBV1" read as a little-endian uint32
const HEADER_BYTES = 16;

/**
 * Rows of one size as bytes: a 16-byte header (magic, dimensions, count, reserved) and then the
 * rows as float32 in the host's byte order, which is little-endian on every platform Lambda
 * (x86_64, arm64) and development machines run, so reading is a copy rather than a parse.
 */
export function encodeVectors(vectors: Float32Array[]): Uint8Array {
  const dimensions = vectors[0]?.length ?? 0;
  const bytes = new Uint8Array(HEADER_BYTES + vectors.length * dimensions * 4);
  const header = new DataView(bytes.buffer);
  header.setUint32(0, MAGIC, true);
  header.setUint32(4, dimensions, true);
  header.setUint32(8, vectors.length, true);
  const rows = new Float32Array(bytes.buffer, HEADER_BYTES);
  vectors.forEach((vector, i) => {
    if (vector.length !== dimensions) throw new Error("Vectors of one set must have one size");
    rows.set(vector, i * dimensions);
  });
  return bytes;
}

export interface VectorMatrix {
  dimensions: number;
  count: number;
  /** `count` unit-length rows of `dimensions`, one after another. */
  rows: Float32Array;
}

/** The rows of an encoded object, or undefined when the bytes are not one. */
export function decodeVectors(bytes: Uint8Array): VectorMatrix | undefined {
  if (bytes.byteLength < HEADER_BYTES) return undefined;
  const header = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
  const dimensions = header.getUint32(4, true);
  const count = header.getUint32(8, true);
  if (
    header.getUint32(0, true) !== MAGIC ||
    bytes.byteLength !== HEADER_BYTES + count * dimensions * 4
  ) {
    return undefined;
  }
  // A copy, so the rows are 4-byte aligned whatever buffer the bytes came in.
  const rows = new Float32Array(bytes.slice(HEADER_BYTES).buffer);
  return { dimensions, count, rows };
}

/** What is embedded for a chunk: its headings give a short passage the context it lacks. */
export const embeddingText = (chunk: Chunk) =>
  chunk.heading ? `${chunk.heading}\n\n${chunk.text}` : chunk.text;

export interface EmbedDeps {
  blobs: Blobs;
  embedder: Embedder;
}

/**
 * Embeds a chunk set into the embedder's space and stores the vectors beside it; answers their
 * key (which the indexer keeps when it deletes stale objects) and the vectors, one per chunk.
 * Idempotent: vectors already there are read, not computed again (a redelivered message or a
 * reindex of unchanged text costs no model call). Provider failures are thrown as the llm layer's
 * domain errors, so the queue retries them.
 */
export async function embedChunks(
  { blobs, embedder }: EmbedDeps,
  chunksKey: string,
  chunks: Chunk[],
): Promise<{ key: string; vectors: Float32Array[] }> {
  const key = vectorsKey(chunksKey, embedder.space);
  const stored = await loadVectors(blobs, chunksKey, embedder.space);
  if (stored && stored.count === chunks.length) return { key, vectors: matrixRows(stored) };
  const vectors = await embedder.embed(chunks.map(embeddingText), {
    operation: "embeddings.index",
  });
  await blobs.put(key, encodeVectors(vectors), "application/octet-stream");
  return { key, vectors };
}

/** The rows of a matrix as one vector each (views, not copies). */
export function matrixRows({ rows, dimensions, count }: VectorMatrix): Float32Array[] {
  return Array.from({ length: count }, (_, i) =>
    rows.subarray(i * dimensions, (i + 1) * dimensions),
  );
}

/** A chunk set's vectors in one space, or undefined when it has none there. */
export async function loadVectors(
  blobs: Blobs,
  chunksKey: string,
  space: EmbeddingSpace,
): Promise<VectorMatrix | undefined> {
  const bytes = await blobs.get(vectorsKey(chunksKey, space));
  return bytes && decodeVectors(bytes);
}
