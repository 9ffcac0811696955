import { createHash } from "node:crypto";
import { mapLimit } from "../../async.js";
import { conflict, notFound, serviceUnavailable } from "../../errors.js";
import { isId, newId } from "../../ids.js";
import { logger } from "../../log.js";
import type { Blobs, StoredObject } from "../../store/blobs.js";
import type { IndexMessage, Queue } from "../../store/queue.js";
import { type Condition, type Item, type Page, type Table, wsKey } from "../../store/table.js";

import { crawlSourceIds } from "../crawl/store.js";
import type { RefreshSchedule, SourceStatus, SourceType } from "./fields.js";
import { refreshMarker, SCHEDULE_MARKER } from "./schedule.js";

export type { RefreshSchedule, SourceStatus, SourceType } from "./fields.js";

/** A knowledge source as the API shows it (field names from the seed contract). */
export interface KnowledgeSource {
  id: string;
  type: SourceType;
  name: string;
  source_url_or_path: string;
  status: SourceStatus;
  chunk_count: number;
  enabled: 0 | 1;
  created_at: string;
  indexed_at: string | null;
  last_error: string | null;
  error_code: string | null;
  /** The crawl that found this page, for sources a crawl created. */
  crawl_id: string | null;
  /** How often a URL source is fetched again to pick up changes (null: never by itself). */
  refresh: RefreshSchedule | null;
  /** When a URL source's page was last fetched (indexed or checked for changes). */
  last_checked_at: string | null;
  /** When the indexed content last changed (first indexed counts as a change). */
  last_changed_at: string | null;
  /** When a refresh found the page gone (HTTP 404 or 410); its content stays indexed. */
  gone_at: string | null;
}

/** The stored record: the public fields plus what the pipeline needs. */
export interface SourceItem
  extends Item,
    Omit<
      KnowledgeSource,
      | "source_url_or_path"
      | "crawl_id"
      | "refresh"
      | "last_checked_at"
      | "last_changed_at"
      | "gone_at"
    > {
  /** Null for raw text. */
  source_url_or_path: string | null;
  /** Absent on records written before crawls existed. */
  crawl_id?: string | null;
  /** Absent on records written before refreshes existed, like the next three. */
  refresh?: RefreshSchedule | null;
  last_checked_at?: string | null;
  last_changed_at?: string | null;
  gone_at?: string | null;
  /** The page's `ETag` and `Last-Modified` when it was last fetched, for conditional refreshes. */
  etag?: string | null;
  last_modified?: string | null;
  /**
   * The revision whose content is `content_key`, already fetched (a crawl's extracted page);
   * other revisions fetch the live page. Absent: revision 1, when there is a `content_key`.
   */
  snapshot_revision?: number;
  /** A crawl's fresh copy of an indexed page, waiting for the index worker to compare. */
  refresh_snapshot?: string | null;
  /**
   * What keeps a web page in the knowledge base: the crawls that indexed or refreshed it (a
   * scheduled run counts as the crawl it repeats) and `DIRECT_HOLDER` for an add of its URL.
   * Absent on records written before pages could belong to several crawls (see `holdersOf`).
   */
  holders?: Set<string>;
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

/** What `releaseCrawl` reads of every source to find a crawl's pages. */
const HOLDER_FIELDS = ["pk", "sk", "id", "type", "source_url_or_path", "crawl_id", "holders"];

/** The holder of a source added through `POST /api/knowledge` rather than by a crawl. */
export const DIRECT_HOLDER = "direct";

/** What holds a source: its `holders`, or for an older record what created it. */
export function holdersOf(source: Pick<SourceItem, "holders" | "crawl_id">): Set<string> {
  return source.holders ?? new Set([source.crawl_id ?? DIRECT_HOLDER]);
}

/**
 * Whether search may return the source: enabled, with an indexed revision in the index. A source
 * being indexed again keeps answering with what it had until the new revision replaces it.
 */
export const isSearchable = (source: Pick<SourceItem, "status" | "enabled" | "chunks_key">) =>
  source.enabled === 1 &&
  (source.status === "indexed" || (source.status === "indexing" && source.chunks_key !== null));

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
    // The interface types it as a string: raw text has no URL or path, so it reads empty.
    source_url_or_path: item.source_url_or_path ?? "",
    status: item.status,
    chunk_count: item.chunk_count,
    enabled: item.enabled,
    created_at: item.created_at,
    indexed_at: item.indexed_at,
    last_error: item.last_error,
    error_code: item.error_code,
    crawl_id: item.crawl_id ?? null,
    refresh: item.refresh ?? null,
    last_checked_at: item.last_checked_at ?? null,
    last_changed_at: item.last_changed_at ?? null,
    gone_at: item.gone_at ?? null,
  };
}

/** What a new source is made of; the rest of its record starts empty. */
export type NewSource = Pick<SourceItem, "type" | "name" | "source_url_or_path"> & {
  id?: string;
  content_key?: string | null;
  crawl_id?: string | null;
};

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

/** What can be changed of a source in place. */
export interface SourceChanges {
  enabled?: boolean | undefined;
  name?: string | undefined;
  refresh?: RefreshSchedule | null | undefined;
}

/**
 * `KBURL#{hash}`: the claim of a canonical URL by the one source that stands for it, created with
 * a conditional put, so two adds of one URL, racing or not, make one source.
 */
const URL_PREFIX = "KBURL#";
// Stryker disable next-line MethodExpression: the whole hash tells the same keys apart
const urlKey = (url: string) =>
  `${URL_PREFIX}${createHash("sha256").update(url).digest("hex").slice(0, 32)}`;

interface UrlClaim extends Item {
  sourceId: string;
  claimedAt: string;
}

/** What claiming a workspace's existing URL sources did (`claimUrlSources`). */
export interface UrlClaims {
  /** URL sources given the claim they lacked. */
  claimed: number;
  /** URL sources whose URL another, older source had claimed: copies to delete. */
  duplicates: string[];
}

/**
 * Gives every URL source among a workspace's `sources` (all of them, as listed by the caller) the
 * claim of its URL, oldest source first: URL sources added before one source per URL existed have
 * none, so adding their URL again would make a second source. A URL two old sources share stays
 * the older one's; the newer are reported, not deleted. Safe to run twice and while the service
 * runs (claims are conditional puts).
 */
export async function claimUrlSources(
  table: Table,
  workspaceId: string,
  sources: readonly SourceItem[],
): Promise<UrlClaims> {
  const pk = wsKey(workspaceId);
  const urlSources = sources
    .filter((source) => source.type === "url" && source.source_url_or_path)
    .sort((a, b) => a.created_at.localeCompare(b.created_at));
  const result: UrlClaims = { claimed: 0, duplicates: [] };
  for (const source of urlSources) {
    const sk = urlKey(source.source_url_or_path as string);
    const claim: UrlClaim = { pk, sk, sourceId: source.id, claimedAt: source.created_at };
    if (await table.create(claim)) result.claimed++;
    else if ((await table.get<UrlClaim>(pk, sk))?.sourceId !== source.id) {
      result.duplicates.push(source.id);
    }
  }
  return result;
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
    const pk = wsKey(workspaceId);
    const claim: UrlClaim = {
      pk,
      sk: urlKey(page.url),
      sourceId: page.id ?? newId("source"),
      claimedAt: new Date().toISOString(),
    };
    for (let poll = 0; ; poll++) {
      if (await this.deps.table.create(claim)) {
        return { item: await this.createPage(workspaceId, claim.sourceId, page), created: true };
      }
      const owner = await this.deps.table.get<UrlClaim>(pk, claim.sk);
      const existing =
        owner && (await this.deps.table.get<SourceItem>(pk, sourceKey(owner.sourceId)));
      if (existing) return { item: await this.refreshPage(existing, page), created: false };
      if (!owner) continue; // released by a delete meanwhile: claim it afresh
      if (Date.now() - Date.parse(owner.claimedAt) > ORPHAN_CLAIM_MS) {
        // Left by an add that crashed before it wrote its source: take it over.
        const taken = await this.deps.table.update(pk, claim.sk, claim, {
          expression: "sourceId = :seen",
          values: { ":seen": owner.sourceId },
        });
        if (taken) {
          return { item: await this.createPage(workspaceId, claim.sourceId, page), created: true };
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
    const claim = await this.deps.table.get<UrlClaim>(wsKey(workspaceId), urlKey(url));
    if (!claim) return;
    const now = new Date().toISOString();
    await this.deps.table.update(
      wsKey(workspaceId),
      sourceKey(claim.sourceId),
      { gone_at: now, last_checked_at: now },
      { expression: "attribute_not_exists(gone_at) OR gone_at = :none", values: { ":none": null } },
    );
  }

  /** Changes a source's name, whether it is enabled, or its refresh schedule (URL sources). */
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
    const schedule = changes.refresh;
    const item = await this.deps.table.update<SourceItem>(
      wsKey(workspaceId),
      sourceKey(id),
      {
        enabled: changes.enabled === undefined ? undefined : changes.enabled ? 1 : 0,
        name: changes.name,
        refresh: schedule,
        ...(schedule ? refreshMarker(workspaceId, id, schedule) : {}),
      },
      undefined,
      schedule === null ? SCHEDULE_MARKER : [],
    );
    if (!item) throw notFound("knowledge source", id);
    // The name and whether it is enabled are what search reads from the table.
    await bumpLiveSources(this.deps.table, workspaceId);
    return item;
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
    let item =
      (await this.deps.table.change<SourceItem>(existing.pk, existing.sk, {
        add: { holders },
      })) ?? existing;
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
    const item = await this.deps.table.update<SourceItem>(
      wsKey(workspaceId),
      sourceKey(id),
      {
        status: "indexing",
        revision: current.revision + 1,
        last_error: null,
        error_code: null,
        refresh_snapshot: snapshotKey,
        ...indexingMarker(workspaceId, id, new Date().toISOString()),
      },
      { expression: "revision = :seen", values: { ":seen": current.revision } },
      snapshotKey === undefined ? ["refresh_snapshot"] : [],
    );
    if (!item) {
      // Deleted, or reindexed by a concurrent request: re-read to tell which.
      return this.reindex(workspaceId, id, options);
    }
    if (isSearchable(current) !== isSearchable(item)) {
      await bumpLiveSources(this.deps.table, workspaceId);
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
      // An older record first gets the set its creator implies, to take the crawl out of.
      if (!source.holders)
        await table.change(source.pk, source.sk, { add: { holders: holdersOf(source) } });
      const after = await table.change<SourceItem>(source.pk, source.sk, {
        pull: { holders: new Set([crawlId]) },
      });
      if (!after) return; // deleted meanwhile
      // A set left empty is gone; an add of the page's URL meanwhile keeps it.
      const removed =
        after.holders === undefined &&
        (await this.remove(after, { expression: "attribute_not_exists(holders)", values: {} }));
      if (removed) released.deleted++;
      else released.kept++;
    });
    return released;
  }

  /** Deletes a source's record (under `condition`) and then what it owned; false if it could not. */
  private async remove(source: SourceItem, condition?: Condition): Promise<boolean> {
    const { table, blobs, indexQueue } = this.deps;
    const { workspaceId, id } = source;
    if (!(await table.delete(source.pk, source.sk, condition))) return false;
    await bumpLiveSources(table, workspaceId);
    if (source.type === "url" && source.source_url_or_path) {
      // The URL is free again, unless another source claimed it meanwhile.
      await table.delete(source.pk, urlKey(source.source_url_or_path), {
        expression: "sourceId = :id",
        values: { ":id": id },
      });
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
      if (failed?.chunks_key) await bumpLiveSources(this.deps.table, item.workspaceId);
      throw serviceUnavailable("Indexing could not be queued; try again", {
        id: item.id,
        status: failed?.status ?? item.status,
      });
    }
  }
}
