import { createHash } from "node:crypto";
import { type Failures, type SandboxBounds, sandbox } from "../../files/sandbox.js";
import type { Embedder, EmbeddingSpace } from "../../llm/embeddings.js";
import { logger } from "../../log.js";
import type { SearchIndex, SourceDocument } from "../../search/index.js";
import type { Blobs } from "../../store/blobs.js";
import type { Delivery, IndexMessage } from "../../store/queue.js";
import type { Condition, Table } from "../../store/table.js";
import {
  bumpLiveSources,
  INDEXING_MARKER,
  indexingMarker,
  LAST_ATTEMPT_PARTITION,
  type SourceItem,
  type SourceType,
  sourceBlobPrefix,
  sourceKey,
} from "../sources/sources.js";
import { type Chunk, type ChunkingOptions, normalizeDocument, PAGE_BREAK } from "./chunking.js";
import { embedChunks, indexSpace } from "./embeddings.js";

/** Chunking a source's text (at most a few megabytes) in a sandbox thread. */
const CHUNK_BOUNDS: SandboxBounds = { timeoutMs: 30_000, maxHeapMb: 256 };
const CHUNK_FAILURES: Failures = {
  refused: (code, message) => new IndexingError(code, message),
  timedOut: (seconds) =>
    new IndexingError("timeout", `Chunking the text took longer than ${seconds} seconds`),
  outOfMemory: (heapMb) =>
    new IndexingError("too_large", `Chunking the text needed more than ${heapMb} MB of memory`),
};

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

/** A source's chunks as stored in the bucket, one object per chunk set. */
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
  /** The persisted search index every indexed source is written to. */
  search: SearchIndex;
}

export type IndexOutcome = "indexed" | "failed" | "skipped";

/** The write condition that the given revision of a source is current and still `indexing`. */
const stillIndexing = (revision: number): Condition => ({
  expression: "revision = :rev AND #status = :indexing",
  values: { ":rev": revision, ":indexing": "indexing" },
  names: { "#status": "status" },
});

/** A source's chunks, and their vectors in one embedding space, as the search index takes them. */
export function searchDocument(
  source: SourceItem,
  chunks: Chunk[],
  embedded?: { space: EmbeddingSpace; vectors: Float32Array[] },
): SourceDocument {
  return {
    source: { id: source.id, type: source.type, crawlId: source.crawl_id ?? null },
    chunks: chunks.map((chunk) => ({
      chunkIndex: chunk.index,
      text: chunk.text,
      heading: chunk.heading,
      page: chunk.page ?? null,
    })),
    ...(embedded
      ? { vectors: { space: indexSpace(embedded.space), vectors: embedded.vectors } }
      : {}),
  };
}

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
 * Turns a source's content into stored chunks and writes them to the search index. Idempotent: a
 * message for an older revision, or a revision already finished, changes nothing; one for a
 * deleted source removes whatever rows of it the index still holds.
 */
export class Indexer {
  constructor(private readonly deps: IndexerDeps) {}

  async handle(message: IndexMessage, delivery: Delivery): Promise<IndexOutcome> {
    const { table } = this.deps;
    const pk = `WS#${message.workspaceId}`;
    const source = await table.get<SourceItem>(pk, sourceKey(message.sourceId));
    if (!source) {
      await this.deps.search.removeSource(message.workspaceId, message.sourceId);
      return "skipped";
    }
    if (source.revision !== message.revision || source.status !== "indexing") return "skipped";
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

  /**
   * Our revision was replaced or the source deleted while we worked. Replaced: the newer
   * revision's worker replaces whatever we wrote. Deleted: take back the rows and objects we
   * wrote, so nothing outlives the source (its delete may have cleaned up before we wrote).
   */
  private async skipAfterWriting(source: SourceItem, prefix: string): Promise<IndexOutcome> {
    if (!(await this.deps.table.get(source.pk, source.sk))) {
      await this.deps.search.removeSource(source.workspaceId, source.id);
      await this.deps.blobs.deletePrefix(prefix);
    }
    return "skipped";
  }

  /** Whether the source still exists and still waits for this revision. */
  private async stillToIndex(source: SourceItem): Promise<boolean> {
    const current = await this.deps.table.get<SourceItem>(source.pk, source.sk);
    return current?.revision === source.revision && current.status === "indexing";
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
    let chunks: Chunk[] | undefined;
    if (source.chunks_key === chunksKey) {
      chunks = (await blobs.getJson<StoredChunks>(chunksKey))?.chunks;
    }
    if (!chunks) {
      // In the sandbox: a megabyte of tiny sentences takes about a second of one core, which
      // must not hold the worker's event loop (other records, the local runtime's API).
      chunks = await sandbox.run(
        "chunk",
        { text, options: chunking },
        CHUNK_BOUNDS,
        CHUNK_FAILURES,
      );
      await blobs.putJson(chunksKey, { sourceId: source.id, chunks } satisfies StoredChunks);
    }
    const keep = new Set([chunksKey]);
    const embedded = this.deps.embedder
      ? await embedChunks({ blobs, embedder: this.deps.embedder }, chunksKey, chunks)
      : undefined;
    if (embedded) keep.add(embedded.key);

    // The rows go into the index before the source goes live, so search never sees it half
    // written; under the index's writer lock, and only while this revision is still the one to
    // index, so a late message can never put an older revision's rows back.
    const space = this.deps.embedder?.space;
    const written = await this.deps.search.replaceSource(
      source.workspaceId,
      searchDocument(source, chunks, space && embedded && { space, vectors: embedded.vectors }),
      { precondition: () => this.stillToIndex(source) },
    );
    if (!written) return this.skipAfterWriting(source, prefix);

    const done = await table.update<SourceItem>(
      source.pk,
      source.sk,
      {
        status: "indexed",
        chunk_count: chunks.length,
        chunks_key: chunksKey,
        content_hash: hash,
        indexed_at: new Date().toISOString(),
        last_error: null,
        error_code: null,
      },
      { expression: "revision = :rev", values: { ":rev": source.revision } },
      INDEXING_MARKER,
    );
    if (!done) return this.skipAfterWriting(source, prefix);
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
