import { createHash } from "node:crypto";
import type { Embedder } from "../llm/embeddings.js";
import { logger } from "../log.js";
import type { Blobs } from "../store/blobs.js";
import type { Condition, Table } from "../store/table.js";
import {
  type Chunk,
  type ChunkingOptions,
  chunkDocument,
  normalizeDocument,
  PAGE_BREAK,
} from "./chunking.js";
import { embedChunks } from "./embeddings.js";
import { bumpLiveSources } from "./live-sources.js";
import {
  INDEXING_MARKER,
  type IndexMessage,
  indexingMarker,
  LAST_ATTEMPT_PARTITION,
  type SourceItem,
  type SourceType,
  sourceBlobPrefix,
  sourceKey,
} from "./sources.js";

/** A failure that retrying cannot fix: the source is marked `failed` with this code and message. */
export class IndexingError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "IndexingError";
  }
}

/** A source's content as text; Markdown headings and form-feed page breaks guide the chunker. */
export interface LoadedContent {
  text: string;
}

export type ContentLoader = (source: SourceItem) => Promise<LoadedContent>;

export interface StoredChunks {
  sourceId: string;
  chunks: Chunk[];
}

export interface IndexerDeps {
  table: Table;
  blobs: Blobs;
  chunking: ChunkingOptions;
  /** How each type of source gets its content; a type without one fails clearly. */
  loaders: Partial<Record<SourceType, ContentLoader>>;
  /** Embeds chunk sets for hybrid search, when an embedding model is configured. */
  embedder?: Embedder | undefined;
}

export interface Delivery {
  /** How often this message has been received, this time included. */
  receiveCount: number;
  /** Deliveries before the message goes to the dead-letter queue. */
  maxReceiveCount: number;
}

export type IndexOutcome = "indexed" | "failed" | "skipped";

/** The write condition that the given revision of a source is current and still `indexing`. */
const stillIndexing = (revision: number): Condition => ({
  expression: "revision = :rev AND #status = :indexing",
  values: { ":rev": revision, ":indexing": "indexing" },
  names: { "#status": "status" },
});

/** Marks the given revision of a source failed; a newer revision or a deleted source is left alone. */
export async function failSource(
  table: Table,
  source: Pick<SourceItem, "pk" | "sk" | "revision">,
  code: string,
  message: string,
): Promise<boolean> {
  const failed = await table.update(
    source.pk,
    source.sk,
    { status: "failed", error_code: code, last_error: message },
    stillIndexing(source.revision),
    INDEXING_MARKER,
  );
  return failed !== undefined;
}

/** Reads a text source's stored content. */
export function textLoader(blobs: Blobs): ContentLoader {
  return async (source) => {
    const text = source.content_key ? await blobs.getText(source.content_key) : undefined;
    if (text === undefined)
      throw new IndexingError("content_missing", "The source's text is missing");
    return { text };
  };
}

/**
 * Turns a source's content into stored chunks. Idempotent: a message for a deleted source, an
 * older revision, or a revision already finished changes nothing.
 */
export class Indexer {
  constructor(private readonly deps: IndexerDeps) {}

  async handle(message: IndexMessage, delivery: Delivery): Promise<IndexOutcome> {
    const { table } = this.deps;
    const pk = `WS#${message.workspaceId}`;
    const source = await table.get<SourceItem>(pk, sourceKey(message.sourceId));
    if (!source || source.revision !== message.revision || source.status !== "indexing") {
      return "skipped";
    }
    const last = delivery.receiveCount >= delivery.maxReceiveCount;
    if (last && !(await this.markLastAttempt(source))) return "skipped";
    try {
      return await this.index(source);
    } catch (err) {
      if (err instanceof IndexingError) return this.fail(source, err.code, err.message);
      if (last) {
        logger.error("indexing failed on its last delivery", { sourceId: source.id, error: err });
        await this.fail(
          source,
          "internal_error",
          "Indexing failed repeatedly; reindex to try again",
        );
      }
      throw err;
    }
  }

  private async index(source: SourceItem): Promise<IndexOutcome> {
    const { table, blobs, chunking, loaders } = this.deps;
    const load = loaders[source.type];
    if (!load)
      throw new IndexingError("not_supported", `Sources of type ${source.type} cannot be indexed`);
    const text = normalizeDocument((await load(source)).text);
    if (!text.replaceAll(PAGE_BREAK, "").trim())
      throw new IndexingError("empty_content", "The source has no readable text to index");

    const hash = createHash("sha256")
      .update(`${chunking.size}:${chunking.overlap}\n${text}`)
      .digest("hex");
    const prefix = sourceBlobPrefix(source.workspaceId, source.id);
    const chunksKey = `${prefix}chunks/${hash.slice(0, 32)}.json`;
    let chunkCount = source.chunk_count;
    let chunks: Chunk[] | undefined;
    if (source.chunks_key !== chunksKey || !(await blobs.exists(chunksKey))) {
      chunks = chunkDocument(text, chunking);
      await blobs.putJson(chunksKey, { sourceId: source.id, chunks } satisfies StoredChunks);
      chunkCount = chunks.length;
    }
    // Vectors are written before the source goes live, so search never sees it half embedded.
    const keep = new Set([chunksKey]);
    if (this.deps.embedder) {
      keep.add(await embedChunks({ blobs, embedder: this.deps.embedder }, chunksKey, chunks));
    }

    const done = await table.update<SourceItem>(
      source.pk,
      source.sk,
      {
        status: "indexed",
        chunk_count: chunkCount,
        chunks_key: chunksKey,
        content_hash: hash,
        indexed_at: new Date().toISOString(),
        last_error: null,
        error_code: null,
      },
      { expression: "revision = :rev", values: { ":rev": source.revision } },
      INDEXING_MARKER,
    );
    if (!done) {
      // Deleted while we worked: take back what we wrote, so nothing outlives the source.
      if (!(await table.get(source.pk, source.sk))) await blobs.deletePrefix(prefix);
      return "skipped";
    }
    await bumpLiveSources(table, source.workspaceId);
    // A first revision has no earlier chunk sets to remove: two listings saved per new source.
    if (source.revision > 1 || source.chunks_key !== null) {
      const stale = [
        ...(await blobs.list(`${prefix}chunks/`)),
        ...(await blobs.list(`${prefix}vectors/`)),
      ].filter((key) => !keep.has(key));
      if (stale.length > 0) await blobs.delete(stale);
    }
    return "indexed";
  }

  /**
   * Records that the message's last delivery begins: should it end without a result (a crash or a
   * timeout, with no delivery to follow), the watchdog fails the source minutes later. False when
   * the revision finished or was replaced meanwhile.
   */
  private async markLastAttempt(source: SourceItem): Promise<boolean> {
    const marked = await this.deps.table.update(
      source.pk,
      source.sk,
      indexingMarker(
        source.workspaceId,
        source.id,
        new Date().toISOString(),
        LAST_ATTEMPT_PARTITION,
      ),
      stillIndexing(source.revision),
    );
    return marked !== undefined;
  }

  private async fail(source: SourceItem, code: string, message: string): Promise<IndexOutcome> {
    await failSource(this.deps.table, source, code, message);
    return "failed";
  }
}
