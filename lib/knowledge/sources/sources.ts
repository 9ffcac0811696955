import { conflict, notFound, serviceUnavailable } from "../../errors.js";
import { isId, newId } from "../../ids.js";
import { logger } from "../../log.js";
import type { Blobs, StoredObject } from "../../store/blobs.js";
import type { IndexMessage, Queue } from "../../store/queue.js";
import { type Item, type Page, type Table, wsKey } from "../../store/table.js";

import type { SourceStatus, SourceType } from "./fields.js";

export type { SourceStatus, SourceType } from "./fields.js";

/** A knowledge source as the API shows it (field names from the seed contract). */
export interface KnowledgeSource {
  id: string;
  type: SourceType;
  name: string;
  source_url_or_path: string | null;
  status: SourceStatus;
  chunk_count: number;
  enabled: 0 | 1;
  created_at: string;
  indexed_at: string | null;
  last_error: string | null;
  error_code: string | null;
  /** The crawl that found this page, for sources a crawl created. */
  crawl_id: string | null;
}

/** The stored record: the public fields plus what the pipeline needs. */
export interface SourceItem extends Item, Omit<KnowledgeSource, "crawl_id"> {
  /** Absent on records written before crawls existed. */
  crawl_id?: string | null;
  workspaceId: string;
  /** Bumped by every reindex; a worker only completes the revision it was sent for. */
  revision: number;
  /** The raw content (text or uploaded file) in the bucket, when the source has one. */
  content_key: string | null;
  /**
   * A presigned upload's file as it was accepted (kept where no upload form can write): indexing
   * reads this version of `content_key` only.
   */
  accepted_file?: StoredObject;
  /** The chunks of the indexed revision in the bucket. */
  chunks_key: string | null;
  content_hash: string | null;
}

export const SOURCE_PREFIX = "KB#";

/** The revision an index message carries for a deleted source: it only removes its rows. */
export const REMOVED_REVISION = Number.MAX_SAFE_INTEGER;

/**
 * A counter per workspace that moves whenever the set of searchable sources may have changed: a
 * source indexed, reindexed, enabled, disabled or deleted. Writers bump it after their own write,
 * so a reader that sees the new value also sees the change.
 */
export const GENERATION_SK = "KBGEN";

export async function bumpLiveSources(table: Table, workspaceId: string): Promise<void> {
  await table.increment(wsKey(workspaceId), GENERATION_SK, "generation", 1);
}

/**
 * While a source is `indexing` it carries these attributes, which place it in the sparse `gsi1`
 * index: under `INDEXING`, sorted by when indexing started, then, once its message's last delivery
 * begins, under `INDEXING_LAST_ATTEMPT`, sorted by when that began. The watchdog finds stalled
 * sources there without scanning. Finishing, failing or stalling removes them in the same write.
 */
export const INDEXING_PARTITION = "INDEXING";
export const LAST_ATTEMPT_PARTITION = "INDEXING_LAST_ATTEMPT";
export const INDEXING_MARKER = ["gsi1pk", "gsi1sk"];
export const indexingMarker = (
  workspaceId: string,
  id: string,
  since: string,
  partition = INDEXING_PARTITION,
) => ({ gsi1pk: partition, gsi1sk: `${since}#${workspaceId}#${id}` });
export const sourceKey = (id: string) => `${SOURCE_PREFIX}${id}`;
export const sourceBlobPrefix = (workspaceId: string, id: string) => `ws/${workspaceId}/kb/${id}/`;

export function toPublic(item: SourceItem): KnowledgeSource {
  return {
    id: item.id,
    type: item.type,
    name: item.name,
    source_url_or_path: item.source_url_or_path,
    status: item.status,
    chunk_count: item.chunk_count,
    enabled: item.enabled,
    created_at: item.created_at,
    indexed_at: item.indexed_at,
    last_error: item.last_error,
    error_code: item.error_code,
    crawl_id: item.crawl_id ?? null,
  };
}

/** What a new source is made of; the rest of its record starts empty. */
export type NewSource = Pick<KnowledgeSource, "type" | "name" | "source_url_or_path"> & {
  id?: string;
  content_key?: string | null;
  crawl_id?: string | null;
};

/**
 * A new source's record: enabled, first revision, nothing indexed yet, status `indexing`.
 * Callers that start it in another state (an awaited upload, a seeded index) override fields.
 */
export function newSourceItem(
  workspaceId: string,
  fields: NewSource,
  now = new Date().toISOString(),
): SourceItem {
  const id = fields.id ?? newId("source");
  return {
    pk: wsKey(workspaceId),
    sk: sourceKey(id),
    workspaceId,
    id,
    type: fields.type,
    name: fields.name,
    source_url_or_path: fields.source_url_or_path,
    status: "indexing",
    chunk_count: 0,
    enabled: 1,
    created_at: now,
    indexed_at: null,
    last_error: null,
    error_code: null,
    crawl_id: fields.crawl_id ?? null,
    revision: 1,
    content_key: fields.content_key ?? null,
    chunks_key: null,
    content_hash: null,
  };
}

export type ListFilter = {
  status?: SourceStatus | undefined;
  enabled?: 0 | 1 | undefined;
  type?: SourceType | undefined;
};

export interface SourceDeps {
  table: Table;
  blobs: Blobs;
  indexQueue: Queue<IndexMessage>;
}

/** Knowledge sources of one workspace: records in the table, content and chunks in the bucket. */
export class Sources {
  constructor(private readonly deps: SourceDeps) {}

  async get(workspaceId: string, id: string): Promise<SourceItem> {
    const item = isId("source", id)
      ? await this.deps.table.get<SourceItem>(wsKey(workspaceId), sourceKey(id))
      : undefined;
    if (!item) throw notFound("knowledge source", id);
    return item;
  }

  /** Records a new source and queues its indexing. */
  async create(workspaceId: string, fields: NewSource): Promise<SourceItem> {
    const fresh = newSourceItem(workspaceId, fields);
    const item = { ...fresh, ...indexingMarker(workspaceId, fresh.id, fresh.created_at) };
    if (!(await this.deps.table.create(item))) {
      throw conflict(`A knowledge source with id ${item.id} exists already`);
    }
    return this.enqueue(item);
  }

  /** Stores raw text in the bucket, then records the source. */
  async createText(workspaceId: string, text: string, name: string): Promise<SourceItem> {
    const id = newId("source");
    const contentKey = `${sourceBlobPrefix(workspaceId, id)}content.txt`;
    await this.deps.blobs.put(contentKey, text, "text/plain; charset=utf-8");
    return this.create(workspaceId, {
      id,
      type: "text",
      name,
      source_url_or_path: null,
      content_key: contentKey,
    });
  }

  async list(
    workspaceId: string,
    filter: ListFilter,
    limit: number,
    cursor?: string,
  ): Promise<Page<SourceItem>> {
    return this.deps.table.page<SourceItem>({
      pk: wsKey(workspaceId),
      skPrefix: SOURCE_PREFIX,
      limit,
      cursor,
      newestFirst: true,
      equals: filter,
    });
  }

  async setEnabled(workspaceId: string, id: string, enabled: boolean): Promise<SourceItem> {
    await this.get(workspaceId, id);
    const item = await this.deps.table.update<SourceItem>(wsKey(workspaceId), sourceKey(id), {
      enabled: enabled ? 1 : 0,
    });
    if (!item) throw notFound("knowledge source", id);
    await bumpLiveSources(this.deps.table, workspaceId);
    return item;
  }

  /** Puts the source back to `indexing` under a new revision; older messages become stale. */
  async reindex(workspaceId: string, id: string): Promise<SourceItem> {
    const current = await this.get(workspaceId, id);
    const item = await this.deps.table.update<SourceItem>(
      wsKey(workspaceId),
      sourceKey(id),
      {
        status: "indexing",
        revision: current.revision + 1,
        last_error: null,
        error_code: null,
        ...indexingMarker(workspaceId, id, new Date().toISOString()),
      },
      { expression: "revision = :seen", values: { ":seen": current.revision } },
    );
    if (!item) {
      // Deleted, or reindexed by a concurrent request: re-read to tell which.
      return this.reindex(workspaceId, id);
    }
    if (current.status === "indexed") await bumpLiveSources(this.deps.table, workspaceId);
    return this.enqueue(item);
  }

  /**
   * Removes the record first, then its blobs: a late worker finds no record and cleans up after
   * itself. Search stops returning the source at once (it only returns live sources); the index
   * worker, sent the source once more, finds no record and removes its rows from the index.
   */
  async delete(workspaceId: string, id: string): Promise<void> {
    const deleted =
      isId("source", id) && (await this.deps.table.delete(wsKey(workspaceId), sourceKey(id)));
    if (!deleted) throw notFound("knowledge source", id);
    await bumpLiveSources(this.deps.table, workspaceId);
    await this.deps.blobs.deletePrefix(sourceBlobPrefix(workspaceId, id));
    // Best effort: rows left behind are never returned, and take only a few of a search's hits.
    await this.deps.indexQueue
      .send({ kind: "index", workspaceId, sourceId: id, revision: REMOVED_REVISION })
      .catch((error: unknown) => logger.warn("index removal not queued", { id, error }));
  }

  private async enqueue(item: SourceItem): Promise<SourceItem> {
    const message: IndexMessage = {
      kind: "index",
      workspaceId: item.workspaceId,
      sourceId: item.id,
      revision: item.revision,
    };
    try {
      await this.deps.indexQueue.send(message);
      return item;
    } catch {
      const failed = await this.deps.table.update<SourceItem>(
        item.pk,
        item.sk,
        {
          status: "failed",
          error_code: "enqueue_failed",
          last_error: "Indexing could not be queued; reindex the source to try again",
        },
        { expression: "revision = :rev", values: { ":rev": item.revision } },
        INDEXING_MARKER,
      );
      throw serviceUnavailable("Indexing could not be queued; try again", {
        id: item.id,
        status: failed?.status ?? item.status,
      });
    }
  }
}
