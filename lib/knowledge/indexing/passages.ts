import { LRUCache } from "lru-cache";
import type { Blobs } from "../../store/blobs.js";
import type { Chunk } from "./chunking.js";

/**
 * Where each chunk of an indexed revision lies in the text it was chunked from. Beside a chunk set
 * (`…/chunks/<hash>.json`) the indexer stores the normalized text (`<hash>.txt`) and the chunks'
 * spans alone (`<hash>.spans.json`, `[start, end]` per chunk, a few bytes each), so a search can
 * place its hits without reading a chunk set of megabytes and a client can read the passage in
 * context. All three are named by the content hash, so a cached span list never goes stale.
 */

const base = (chunksKey: string) => chunksKey.replace(/\.json$/, "");
export const textKeyOf = (chunksKey: string) => `${base(chunksKey)}.txt`;
export const spansKeyOf = (chunksKey: string) => `${base(chunksKey)}.spans.json`;

export type Spans = Array<[number, number]>;

/** The chunks' spans, or undefined for a chunk set stored before chunks had offsets. */
export function spansOf(chunks: readonly Chunk[]): Spans | undefined {
  const spans: Spans = [];
  for (const { start, end } of chunks) {
    if (start === undefined || end === undefined) return undefined;
    spans.push([start, end]);
  }
  return spans;
}

/** Stores a revision's text and spans beside its chunk set; answers the keys written. */
export async function storePassages(
  blobs: Blobs,
  chunksKey: string,
  text: string,
  spans: Spans,
): Promise<string[]> {
  const keys = [textKeyOf(chunksKey), spansKeyOf(chunksKey)];
  await Promise.all([
    blobs.put(keys[0] as string, text, "text/plain; charset=utf-8"),
    blobs.putJson(keys[1] as string, spans),
  ]);
  return keys;
}

/** Reads spans (cached per process by their immutable key) and stored texts. */
export class Passages {
  private readonly spans = new LRUCache<string, Spans | false>({ max: 2_000 });

  constructor(private readonly blobs: Blobs) {}

  /** The span of each chunk of a chunk set; undefined when it has none (stored before spans). */
  async spansOf(chunksKey: string): Promise<Spans | undefined> {
    const cached = this.spans.get(chunksKey);
    if (cached !== undefined) return cached || undefined;
    const spans = await this.blobs.getJson<Spans>(spansKeyOf(chunksKey));
    // A missing list is remembered a minute only: reindexing the same content writes it later.
    this.spans.set(chunksKey, spans ?? false, spans ? {} : { ttl: 60_000 });
    return spans;
  }

  /** The normalized text a chunk set was made from; undefined when it was not stored. */
  text(chunksKey: string): Promise<string | undefined> {
    return this.blobs.getText(textKeyOf(chunksKey));
  }
}
