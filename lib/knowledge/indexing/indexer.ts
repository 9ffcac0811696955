import { createHash } from "node:crypto";
import { isDomainError } from "../../errors.js";
import { type Failures, type SandboxBounds, sandbox } from "../../files/sandbox.js";
import type { Embedder, EmbeddingSpace } from "../../llm/embeddings.js";
import { logger } from "../../log.js";
import { count } from "../../metrics.js";
import { redactError } from "../../redact.js";
import type { SearchIndex, SourceDocument } from "../../search/index.js";
import type { Blobs } from "../../store/blobs.js";
import type { Delivery, IndexMessage } from "../../store/queue.js";
import type { Table } from "../../store/table.js";
import type { Validators } from "../../web/fetch.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import { chunkingOf } from "../sources/attributes.js";
import { type SourceItem, SourceRecords, toPublic } from "../sources/records.js";
import { type SourceType, sourceBlobPrefix } from "../sources/sources.js";
import { type Chunk, type ChunkingOptions, normalizeDocument, PAGE_BREAK } from "./chunking.js";
import { embedChunks, indexSpace } from "./embeddings.js";
import { spansKeyOf, spansOf, storePassages, textKeyOf } from "./passages.js";

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

/**
 * A failure that a later attempt may not meet (a busy site, the embedding model down): the
 * message is delivered again, and on its last delivery the source fails with this code and
 * message rather than a generic one.
 */
export class RetryableError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "RetryableError";
  }
}

/** A source's content as text; Markdown headings and form-feed page breaks guide the chunker. */
export interface LoadedContent {
  text: string;
  /** A fetched page's validators, kept for conditional refreshes. */
  validators?: Validators;
}

export type ContentLoader = (source: SourceItem) => Promise<LoadedContent>;

/** An indexed page read again: unchanged (a 304), gone (404, 410), or its content to compare. */
export type Refreshed =
  | { kind: "unchanged" }
  | { kind: "gone"; message: string }
  | ({ kind: "content" } & LoadedContent);

export type PageRefresher = (source: SourceItem) => Promise<Refreshed>;

/** A source's chunks as stored in the bucket, one object per chunk set. */
export interface StoredChunks {
  sourceId: string;
  chunks: Chunk[];
}

export interface IndexerDeps {
  table: Table;
  blobs: Blobs;
  /** The service's chunking (CHUNK_SIZE, CHUNK_OVERLAP); a source's own `chunking` wins. */
  chunking: ChunkingOptions;
  /** How each type of source gets its content; a type without one fails clearly. */
  loaders: Partial<Record<SourceType, ContentLoader>>;
  /** Embeds chunk sets for hybrid search, when an embedding model is configured. */
  embedder?: Embedder | undefined;
  /** The persisted search index every indexed source is written to. */
  search: SearchIndex;
  /** Reads indexed URL sources again for refresh messages. */
  refresher?: PageRefresher | undefined;
  /** Told `source.indexed` and `source.failed` as a source gets there. */
  events?: WebhookEvents | undefined;
}

export type IndexOutcome = "indexed" | "failed" | "skipped" | "unchanged" | "gone";

/** What a refresh of an indexed page found: the one place a refresh ends. */
export type RefreshOutcome = "unchanged" | "changed" | "gone";

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

/** Why the last delivery of a message failed, as the source's `error_code` and `last_error`. */
function lastFailure(err: unknown): { code: string; message: string } {
  if (err instanceof RetryableError) return { code: err.code, message: err.message };
  const reason = err instanceof Error ? err.message : String(err);
  return {
    code: "indexing_error",
    message: `Indexing failed on every attempt (${reason.slice(0, 300)}); reindex to try again`,
  };
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
  private readonly records: SourceRecords;

  constructor(private readonly deps: IndexerDeps) {
    this.records = new SourceRecords(deps);
  }

  async handle(message: IndexMessage, delivery: Delivery): Promise<IndexOutcome> {
    const source = await this.records.get(message.workspaceId, message.sourceId);
    if (!source) {
      await this.deps.search.removeSource(message.workspaceId, message.sourceId);
      return "skipped";
    }
    if (source.revision !== message.revision) return "skipped";
    const ready =
      source.status === "indexing" ||
      (source.status === "failed" && source.redrivable === true && (await this.redriven(source)));
    if (!ready) return "skipped";
    const last = delivery.receiveCount >= delivery.maxReceiveCount;
    if (last && !(await this.records.markLastAttempt(source))) return "skipped";
    try {
      const { refresher } = this.deps;
      if (message.refresh && source.type === "url" && refresher) {
        return await this.refresh(source, refresher);
      }
      return await this.index(source);
    } catch (err) {
      if (err instanceof IndexingError) return this.fail(source, err.code, err.message);
      if (last) {
        logger.error("indexing failed on its last delivery", {
          sourceId: source.id,
          error: redactError(err),
        });
        const { code, message: why } = lastFailure(err);
        await this.fail(source, code, why, true);
      }
      throw err;
    }
  }

  /**
   * A message of a source that failed on its last delivery, back from the dead-letter queue
   * (`npm run redrive`): the source goes back to `indexing` for this try.
   */
  private async redriven(source: SourceItem): Promise<boolean> {
    const back = await this.records.redrive(source);
    if (back) source.status = "indexing";
    return back;
  }

  /**
   * Indexes a URL source's revision only if its page changed since the last one: unchanged content
   * (a 304, or the same text by hash) settles back to `indexed` at once, a page gone (404, 410) is
   * marked and keeps what was indexed, and changed content is indexed from what was just read.
   */
  private async refresh(source: SourceItem, refresher: PageRefresher): Promise<IndexOutcome> {
    const found = await refresher(source);
    if (found.kind === "content" && this.contentHash(source, found.text) !== source.content_hash) {
      let outcome: IndexOutcome;
      try {
        outcome = await this.index(source, found);
      } catch (err) {
        if (!(err instanceof IndexingError)) throw err;
        outcome = await this.fail(source, err.code, err.message);
      }
      return this.refreshed(source, outcome === "indexed" ? "changed" : outcome);
    }
    if (!(await this.records.markChecked(source, found))) return "skipped";
    return this.refreshed(source, found.kind === "gone" ? "gone" : "unchanged");
  }

  /** Where every refresh of a page ends, with what it found: webhooks are told `refresh.completed`. */
  private async refreshed(
    source: SourceItem,
    outcome: RefreshOutcome | IndexOutcome,
  ): Promise<IndexOutcome> {
    logger.info("source refreshed", { sourceId: source.id, outcome });
    await this.deps.events?.emit(source.workspaceId, "refresh.completed", {
      id: source.id,
      name: source.name,
      source_url_or_path: source.source_url_or_path,
      crawl_id: source.crawl_id ?? null,
      outcome,
    });
    return outcome === "changed" ? "indexed" : (outcome as IndexOutcome);
  }

  /** How the source's text is chunked: its own settings over the service's. */
  private chunkingFor(source: SourceItem): ChunkingOptions {
    const { size, overlap, byHeadings } = chunkingOf(source.chunking, this.deps.chunking);
    return { size, overlap, byHeadings };
  }

  /** The hash that tells whether a source's content (as chunked, with its settings) changed. */
  private contentHash(source: SourceItem, text: string): string {
    const { size, overlap, byHeadings } = this.chunkingFor(source);
    // Chunking by headings, the default, adds nothing: hashes from before the setting stand.
    const settings = `${size}:${overlap}${byHeadings === false ? ":flat" : ""}`;
    return createHash("sha256")
      .update(`${settings}\n${normalizeDocument(text)}`)
      .digest("hex");
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

  /** Indexes the source's current revision, from `content` when it was read already. */
  private async index(source: SourceItem, content?: LoadedContent): Promise<IndexOutcome> {
    const { blobs, loaders } = this.deps;
    const load = loaders[source.type];
    if (!load)
      throw new IndexingError("not_supported", `Sources of type ${source.type} cannot be indexed`);
    const loaded = content ?? (await load(source));
    const text = normalizeDocument(loaded.text);
    if (!text.replaceAll(PAGE_BREAK, "").trim())
      throw new IndexingError("empty_content", "The source has no readable text to index");

    const hash = this.contentHash(source, text);
    const prefix = sourceBlobPrefix(source.workspaceId, source.id);
    const chunksKey = `${prefix}chunks/${hash.slice(0, 32)}.json`;
    let chunks: Chunk[] | undefined;
    if (source.chunks_key === chunksKey) {
      chunks = (await blobs.getJson<StoredChunks>(chunksKey))?.chunks;
      // A chunk set stored before chunks had offsets is made again, with them.
      if (chunks && !spansOf(chunks)) chunks = undefined;
    }
    const keep = new Set([chunksKey]);
    if (!chunks) {
      // In the sandbox: a megabyte of tiny sentences takes about a second of one core, which
      // must not hold the worker's event loop (other records, the local runtime's API).
      chunks = await sandbox.run(
        "chunk",
        { text, options: this.chunkingFor(source) },
        CHUNK_BOUNDS,
        CHUNK_FAILURES,
      );
      await blobs.putJson(chunksKey, { sourceId: source.id, chunks } satisfies StoredChunks);
      // The text and spans citations read (see passages.ts), stored with the chunk set.
      for (const key of await storePassages(blobs, chunksKey, text, spansOf(chunks) ?? [])) {
        keep.add(key);
      }
    } else {
      for (const key of [textKeyOf(chunksKey), spansKeyOf(chunksKey)]) keep.add(key);
    }
    const embedded = await this.embed(chunksKey, chunks);
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

    const done = await this.records.markIndexed(source, {
      chunkCount: chunks.length,
      chunksKey,
      contentHash: hash,
      validators: loaded.validators,
    });
    if (!done) return this.skipAfterWriting(source, prefix);
    count("SourcesIndexed");
    await this.deps.events?.emit(source.workspaceId, "source.indexed", { ...toPublic(done) });
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
   * Embeds a chunk set when a model is configured. The model being down or busy is retried by
   * the queue and named in the source's error; a request it rejects fails the source at once.
   */
  private async embed(chunksKey: string, chunks: Chunk[]) {
    const { embedder, blobs } = this.deps;
    if (!embedder) return undefined;
    try {
      return await embedChunks({ blobs, embedder }, chunksKey, chunks);
    } catch (err) {
      if (isDomainError(err, "llm_error")) {
        throw new IndexingError(
          "embeddings_failed",
          `The embedding model refused the chunks: ${err.message}`,
        );
      }
      if (isDomainError(err, "llm_unavailable") || isDomainError(err, "upstream_timeout")) {
        throw new RetryableError(
          "embeddings_unavailable",
          `The embedding model is unavailable: ${err.message}`,
        );
      }
      throw err;
    }
  }

  /**
   * Fails the revision while it is still `indexing` (`SourceRecords.fail` tells `source.failed`).
   * `redrivable`: its message goes to the dead-letter queue, and a redrive may index it after all.
   */
  private async fail(
    source: SourceItem,
    code: string,
    message: string,
    redrivable = false,
  ): Promise<IndexOutcome> {
    await this.records.fail(source, { code, message, redrivable });
    return "failed";
  }
}
