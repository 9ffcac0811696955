import { mapLimit } from "../../lib/async.js";
import { newId } from "../../lib/ids.js";
import type { Chunk } from "../../lib/knowledge/indexing/chunking.js";
import type { StoredChunks } from "../../lib/knowledge/indexing/indexer.js";
import {
  newSourceItem,
  type SourceItem,
  sourceBlobPrefix,
} from "../../lib/knowledge/sources/sources.js";
import type { Stores } from "../../lib/store/clients.js";
import type { Corpus } from "../core/corpus.js";

/** A workspace holding a known number of indexed chunks. */
export interface SeededLevel {
  workspaceId: string;
  /** Every chunk's text, in the order written (for floors that work from memory). */
  texts: string[];
  /** The chunk set object of every source. */
  chunkKeys: string[];
  /** Every source's id, in the order of `chunkKeys`. */
  sourceIds: string[];
}

/** Sections of this many chunks share a heading, as a chunked document's do. */
const CHUNKS_PER_SECTION = 8;

function chunkSet(corpus: Corpus, count: number): Chunk[] {
  let heading = corpus.heading();
  return Array.from({ length: count }, (_, index) => {
    if (index % CHUNKS_PER_SECTION === 0) heading = corpus.heading();
    return { index, text: corpus.paragraph(850), heading };
  });
}

/**
 * Writes `chunks` chunks as sources of `perSource` chunks each, straight into the table and the
 * bucket in the shape the indexer leaves them (an `indexed` record and its chunk set object).
 * Search is measured, not indexing (figure 3), and the real pipeline would take minutes for 100k.
 */
export async function seedIndexedSources(
  stores: Stores,
  workspaceId: string,
  chunks: number,
  perSource: number,
  corpus: Corpus,
): Promise<SeededLevel> {
  const sets = Array.from({ length: Math.ceil(chunks / perSource) }, (_, i) =>
    chunkSet(corpus, Math.min(perSource, chunks - i * perSource)),
  );
  const written = await mapLimit(sets, 8, async (set) => {
    const id = newId("source");
    const chunksKey = `${sourceBlobPrefix(workspaceId, id)}chunks/seeded.json`;
    await stores.blobs.putJson(chunksKey, { sourceId: id, chunks: set } satisfies StoredChunks);
    const now = new Date().toISOString();
    const item: SourceItem = {
      ...newSourceItem(
        workspaceId,
        { id, type: "text", name: set[0]?.heading ?? id, source_url_or_path: null },
        now,
      ),
      status: "indexed",
      chunk_count: set.length,
      indexed_at: now,
      chunks_key: chunksKey,
    };
    await stores.table.put(item);
    return { id, chunksKey };
  });
  return {
    workspaceId,
    texts: sets.flatMap((set) => set.map((c) => c.text)),
    chunkKeys: written.map((w) => w.chunksKey),
    sourceIds: written.map((w) => w.id),
  };
}
