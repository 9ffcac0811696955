import { mapLimit } from "../../async.js";
import { conflict, isDomainError, notFound, serviceUnavailable } from "../../errors.js";
import { isId, newId } from "../../ids.js";
import type { Caps } from "../../limits/caps.js";
import { logger } from "../../log.js";
import type { Blobs } from "../../store/blobs.js";
import type { IndexMessage, Queue } from "../../store/queue.js";
import { type Page, type Table, wsKey } from "../../store/table.js";
import type { RenderMode } from "../../web/render/renderer.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import { crawlSourceIds } from "../crawl/frontier.js";
import type { ChunkingSettings, Metadata } from "./attributes.js";
import type { RefreshSchedule, SourceStatus, SourceType } from "./fields.js";
import {
  atRevision,
  DIRECT_HOLDER,
  holdersOf,
  indexingMarker,
  SOURCE_PREFIX,
  type SourceChanges,
  type SourceItem,
  SourceRecords,
  sourceKey,
} from "./records.js";
import { refreshMarker } from "./schedule.js";
import { UrlClaims } from "./url-claims.js";

export type { RefreshSchedule, SourceStatus, SourceType } from "./fields.js";
export {
  DIRECT_HOLDER,
  GENERATION_SK,
  holdersOf,
  INDEXING_MARKER,
  INDEXING_PARTITION,
  indexingMarker,
  isSearchable,
  type KnowledgeSource,
  LAST_ATTEMPT_PARTITION,
  SOURCE_PREFIX,
  type SourceChanges,
  type SourceItem,
  sourceKey,
  toPublic,
} from "./records.js";

/** What `releaseCrawl` reads of every source to find a crawl's pages. */
const HOLDER_FIELDS = ["pk", "sk", "id", "type", "source_url_or_path", "crawl_id", "holders"];

/** The revision an index message carries for a deleted source: it only removes its rows. */
export const REMOVED_REVISION = Number.MAX_SAFE_INTEGER;

export const sourceBlobPrefix = (workspaceId: string, id: string) => `ws/${workspaceId}/kb/${id}/`;

/** What a new source is made of; the rest of its record starts empty. */
export type NewSource = Pick<SourceItem, "type" | "name" | "source_url_or_path"> & {
  id?: string;
  content_key?: string | null;
  crawl_id?: string | null;
} & SourceSettings;

/** What a client may set on any new source (see `attributes.ts`). */
export interface SourceSettings {
  metadata?: Metadata | undefined;
  chunking?: ChunkingSettings | undefined;
  /** URL sources: when the page is rendered in a browser; absent, `auto`. */
  render?: RenderMode | undefined;
}

/** A web page to add: its canonical URL is its identity within the workspace. */
export interface NewPage {
  url: string;
  name: string;
  /** The crawl that adds it (a scheduled run: the crawl it repeats); absent: `DIRECT_HOLDER`. */
  holder?: string;
  /** Its Markdown when the caller just fetched it (a crawl); otherwise the worker fetches it. */
  snapshot?: string;
  /** A new schedule; absent leaves an existing page's schedule as it is. */
  refresh?: RefreshSchedule | null | undefined;
  /** Used for a new source: a crawl names its pages' sources when it finds them. */
  id?: string;
  /** A new source's attributes and chunking; an existing page keeps its own. */
  settings?: SourceSettings | undefined;
}

/** How `reindex` reads the source again. */
export interface ReindexOptions {
  /**
   * Compare with what is indexed (a URL source: a conditional fetch, or `snapshot`): unchanged
   * content settles at once, without chunking, embedding or writing the index again.
   */
  refresh?: boolean;
  /** The page as a crawl just read it (URL sources), instead of fetching it again. */
  snapshot?: string | undefined;
}

/** What deleting a crawl's sources did (`releaseCrawl`). */
export interface Released {
  /** Sources nothing else held: deleted. */
  deleted: number;
  /** Sources another crawl or an add of their URL still holds: kept. */
  kept: number;
}

/** What adding a page did: created its source, or found the one it has already. */
export interface AddedPage {
  item: SourceItem;
  created: boolean;
}

/** A claim whose source is still missing after this long was left by a crashed add. */
const ORPHAN_CLAIM_MS = 30_000;
const CLAIM_POLLS = 20;
const CLAIM_POLL_MS = 100;

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
    refresh: null,
    last_checked_at: null,
    last_changed_at: null,
    gone_at: null,
    revision: 1,
    content_key: fields.content_key ?? null,
    chunks_key: null,
    content_hash: null,
    metadata: fields.metadata ?? {},
    chunking: fields.chunking ?? null,
    ...(fields.render ? { render: fields.render } : {}),
  };
}

export type ListFilter = {
  /** Any of these states. */
  status?: readonly SourceStatus[] | undefined;
  enabled?: 0 | 1 | undefined;
  /** Any of these types. */
  type?: readonly SourceType[] | undefined;
  /** Only the sources these crawls indexed or refreshed (`crawlSourceIds`). */
  crawl_id?: readonly string[] | undefined;
};

export interface SourceDeps {
  table: Table;
  blobs: Blobs;
  indexQueue: Queue<IndexMessage>;
  /** Told `source.failed` when a source's indexing cannot be queued. */
  events?: WebhookEvents | undefined;
  /** The workspace caps (`MAX_SOURCES_PER_WORKSPACE`); the default limits when not given. */
  caps?: Caps | undefined;
}

/**
 * Knowledge sources of one workspace: records in the table (written by `SourceRecords`), content
 * and chunks in the bucket.
 */
export class Sources {
  private readonly records: SourceRecords;
  private readonly urls: UrlClaims;

  constructor(private readonly deps: SourceDeps) {
    this.records = new SourceRecords(deps);
    this.urls = new UrlClaims(deps);
  }

  async get(workspaceId: string, id: string): Promise<SourceItem> {
    const item = isId("source", id) ? await this.records.get(workspaceId, id) : undefined;
    if (!item) throw notFound("knowledge source", id);
    return item;
  }

  /** Records a new source and queues its indexing; `extra` fields go into its first record. */
  async create(
    workspaceId: string,
    fields: NewSource,
    extra: Partial<SourceItem> = {},
  ): Promise<SourceItem> {
    const fresh = newSourceItem(workspaceId, fields);
    const item = {
      ...fresh,
      ...extra,
      ...indexingMarker(workspaceId, fresh.id, fresh.created_at),
    };
    let created: boolean;
    try {
      created = await this.records.create(item);
    } catch (err) {
      // Refused at the sources cap: what was stored for it (a text, a page) is nobody's.
      if (isDomainError(err, "limit_reached")) {
        await this.deps.blobs.deletePrefix(sourceBlobPrefix(workspaceId, item.id));
      }
      throw err;
    }
    if (!created) throw conflict(`A knowledge source with id ${item.id} exists already`);
    return this.enqueue(item);
  }

  /** Stores raw text in the bucket, then records the source. */
  async createText(
    workspaceId: string,
    text: string,
    name: string,
    settings: SourceSettings = {},
  ): Promise<SourceItem> {
    const id = newId("source");
    const contentKey = `${sourceBlobPrefix(workspaceId, id)}content.txt`;
    await this.deps.blobs.put(contentKey, text, "text/plain; charset=utf-8");
    return this.create(workspaceId, {
      id,
      type: "text",
      name,
      source_url_or_path: null,
      content_key: contentKey,
      ...settings,
    });
  }

  /**
   * One page of sources, newest first. A crawl filter reads only its crawls' sources (by key);
   * the other filters apply before the page is cut, so pages stay full.
   */
  async list(
    workspaceId: string,
    { crawl_id, status, type, enabled }: ListFilter,
    limit: number,
    cursor?: string,
  ): Promise<Page<SourceItem>> {
    const query = { pk: wsKey(workspaceId), skPrefix: SOURCE_PREFIX, limit, cursor };
    if (crawl_id === undefined) {
      return this.deps.table.page<SourceItem>({
        ...query,
        newestFirst: true,
        equals: { enabled },
        anyOf: { status, type },
      });
    }
    const ids = await crawlSourceIds(this.deps.table, workspaceId, crawl_id);
    const any = <T>(values: readonly T[] | undefined, value: T) =>
      values === undefined || values.includes(value);
    return this.deps.table.pageOfKeys<SourceItem>({
      ...query,
      sks: [...ids].map(sourceKey),
      keep: (item) =>
        any(status, item.status) &&
        any(type, item.type) &&
        (enabled === undefined || item.enabled === enabled),
    });
  }

  /**
   * Adds a web page, or refreshes the source it has already: a canonical URL is one source per
   * workspace, held by every crawl and add that brought it. The source is `indexing` either way:
   * an indexed one is compared with the page by the index worker (unchanged content settles at
   * once, changed content is reindexed, and what it had keeps answering meanwhile), a failed one
   * is indexed again, and one still indexing is left to finish.
   */
  async addUrl(workspaceId: string, page: NewPage): Promise<AddedPage> {
    const sourceId = page.id ?? newId("source");
    const claimedAt = new Date().toISOString();
    for (let poll = 0; ; poll++) {
      if (await this.urls.claim(workspaceId, page.url, sourceId, claimedAt)) {
        return { item: await this.createClaimed(workspaceId, sourceId, page), created: true };
      }
      const owner = await this.urls.owner(workspaceId, page.url);
      const existing = owner && (await this.records.get(workspaceId, owner.sourceId));
      if (existing) return { item: await this.refreshPage(existing, page), created: false };
      if (!owner) continue; // released by a delete meanwhile: claim it afresh
      if (Date.now() - Date.parse(owner.claimedAt) > ORPHAN_CLAIM_MS) {
        // Left by an add that crashed before it wrote its source: take it over.
        if (await this.urls.takeOver(workspaceId, page.url, owner, sourceId, claimedAt)) {
          return { item: await this.createClaimed(workspaceId, sourceId, page), created: true };
        }
        continue;
      }
      if (poll >= CLAIM_POLLS) {
        throw serviceUnavailable("The same URL is being added right now; try again", {
          url: page.url,
        });
      }
      // Another add of the same URL is writing its source right now.
      await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
    }
  }

  setEnabled(workspaceId: string, id: string, enabled: boolean): Promise<SourceItem> {
    return this.update(workspaceId, id, { enabled });
  }

  /**
   * Marks the source of a URL whose page is gone (a crawl met 404 or 410 on it): what was indexed
   * stays searchable until someone deletes it. No source for the URL: nothing to mark.
   */
  async markGone(workspaceId: string, url: string): Promise<void> {
    const claim = await this.urls.owner(workspaceId, url);
    if (claim) await this.records.markGone(workspaceId, claim.sourceId);
  }

  /** Changes a source's name, whether it is enabled, its refresh schedule (URL sources) or attributes. */
  async update(workspaceId: string, id: string, changes: SourceChanges): Promise<SourceItem> {
    const current = await this.get(workspaceId, id);
    if (changes.refresh !== undefined && current.type !== "url") {
      // The request is well formed; this source's type is what refuses it.
      throw conflict(
        `Only URL sources can be refreshed on a schedule: a ${current.type} source has no page to refetch`,
        {
          path: "refresh",
        },
      );
    }
    const item = await this.records.edit(workspaceId, id, changes);
    if (!item) throw notFound("knowledge source", id);
    return item;
  }

  /** Creates the page whose URL was just claimed; refused at the sources cap, frees the URL. */
  private async createClaimed(workspaceId: string, id: string, page: NewPage) {
    try {
      return await this.createPage(workspaceId, id, page);
    } catch (err) {
      if (isDomainError(err, "limit_reached")) await this.urls.release(workspaceId, page.url, id);
      throw err;
    }
  }

  private async createPage(workspaceId: string, id: string, page: NewPage): Promise<SourceItem> {
    let contentKey: string | null = null;
    if (page.snapshot !== undefined) {
      contentKey = `${sourceBlobPrefix(workspaceId, id)}page.md`;
      await this.deps.blobs.put(contentKey, page.snapshot, "text/markdown; charset=utf-8");
    }
    const fields = {
      id,
      type: "url" as const,
      name: page.name,
      source_url_or_path: page.url,
      content_key: contentKey,
      crawl_id: page.holder ?? null,
      ...page.settings,
    };
    const schedule = page.refresh ?? null;
    return this.create(workspaceId, fields, {
      holders: new Set([page.holder ?? DIRECT_HOLDER]),
      refresh: schedule,
      ...(schedule ? refreshMarker(workspaceId, id, schedule) : {}),
    });
  }

  /** What adding a page again does to the source it has (see `addUrl`). */
  private async refreshPage(existing: SourceItem, page: NewPage): Promise<SourceItem> {
    const { workspaceId, id } = existing;
    // An older record learns what held it so far along with the new holder.
    const holders = new Set([
      ...(existing.holders ? [] : holdersOf(existing)),
      page.holder ?? DIRECT_HOLDER,
    ]);
    let item = (await this.records.hold(existing, holders)) ?? existing;
    if (page.refresh !== undefined && page.refresh !== (existing.refresh ?? null)) {
      item = await this.update(workspaceId, id, { refresh: page.refresh });
    }
    if (item.status === "failed") return this.reindex(workspaceId, id, { snapshot: page.snapshot });
    if (item.status === "indexed") {
      return this.reindex(workspaceId, id, { refresh: true, snapshot: page.snapshot });
    }
    return item;
  }

  /**
   * Puts the source back to `indexing` under a new revision; older messages become stale. What
   * it had indexed keeps answering searches until the new revision replaces it.
   */
  async reindex(
    workspaceId: string,
    id: string,
    options: ReindexOptions = {},
  ): Promise<SourceItem> {
    const current = await this.get(workspaceId, id);
    let snapshotKey: string | undefined;
    if (options.snapshot !== undefined) {
      snapshotKey = `${sourceBlobPrefix(workspaceId, id)}refresh.md`;
      await this.deps.blobs.put(snapshotKey, options.snapshot, "text/markdown; charset=utf-8");
    }
    const item = await this.records.startRevision(current, snapshotKey);
    if (!item) {
      // Deleted, or reindexed by a concurrent request: re-read to tell which.
      return this.reindex(workspaceId, id, options);
    }
    return this.enqueue(item, options.refresh === true);
  }

  /**
   * Removes the record first, then its blobs: a late worker finds no record and cleans up after
   * itself. Search stops returning the source at once (it only returns live sources); the index
   * worker, sent the source once more, finds no record and removes its rows from the index.
   */
  async delete(workspaceId: string, id: string): Promise<void> {
    if (!(await this.remove(await this.get(workspaceId, id))))
      throw notFound("knowledge source", id);
  }

  /**
   * Releases a crawl's hold on the pages it brought (`crawlId`: the crawl a scheduled run
   * repeats, for its runs' pages too): a page nothing else holds any more, no other crawl nor an
   * add of its URL, is deleted; the others are kept.
   */
  async releaseCrawl(workspaceId: string, crawlId: string): Promise<Released> {
    const { table } = this.deps;
    const held = (
      await table.all<SourceItem>(wsKey(workspaceId), SOURCE_PREFIX, HOLDER_FIELDS)
    ).filter((source) => holdersOf(source).has(crawlId));
    const released: Released = { deleted: 0, kept: 0 };
    await mapLimit(held, 8, async (source) => {
      const after = await this.records.release(source, crawlId);
      if (!after) return; // deleted meanwhile
      // A set left empty is gone; an add of the page's URL meanwhile keeps it.
      const removed = after.holders === undefined && (await this.remove(after, { unheld: true }));
      if (removed) released.deleted++;
      else released.kept++;
    });
    return released;
  }

  /**
   * Deletes a source's record (`unheld`: only while nothing holds it) and then what it owned;
   * false if it could not.
   */
  private async remove(source: SourceItem, { unheld = false } = {}): Promise<boolean> {
    const { blobs, indexQueue } = this.deps;
    const { workspaceId, id } = source;
    const deleted = unheld
      ? await this.records.deleteUnheld(source)
      : await this.records.delete(source);
    if (!deleted) return false;
    if (source.type === "url" && source.source_url_or_path) {
      // The URL is free again, unless another source claimed it meanwhile.
      await this.urls.release(workspaceId, source.source_url_or_path, id);
    }
    await blobs.deletePrefix(sourceBlobPrefix(workspaceId, id));
    // Best effort: rows left behind are never returned, and take only a few of a search's hits.
    await indexQueue
      .send({ kind: "index", workspaceId, sourceId: id, revision: REMOVED_REVISION })
      .catch((error: unknown) => logger.warn("index removal not queued", { id, error }));
    return true;
  }

  /** Queues the item's revision for the index worker; `refresh`: see `ReindexOptions`. */
  private async enqueue(item: SourceItem, refresh = false): Promise<SourceItem> {
    const message: IndexMessage = {
      kind: "index",
      workspaceId: item.workspaceId,
      sourceId: item.id,
      revision: item.revision,
      ...(refresh ? { refresh } : {}),
    };
    try {
      await this.deps.indexQueue.send(message);
      return item;
    } catch {
      const failed = await this.records.fail(
        item,
        {
          code: "enqueue_failed",
          message: "Indexing could not be queued; reindex the source to try again",
        },
        atRevision(item.revision),
      );
      throw serviceUnavailable("Indexing could not be queued; try again", {
        id: item.id,
        status: failed?.status ?? item.status,
      });
    }
  }
}
