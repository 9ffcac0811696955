import { Caps } from "../../limits/caps.js";
import { type QuotaCharge, refundUnused } from "../../limits/quotas.js";
import { count } from "../../metrics.js";
import type { StoredObject } from "../../store/blobs.js";
import { and, type Condition, equals, missing, or } from "../../store/conditions.js";
import { GSI1_SHARDS, shardOf } from "../../store/schema.js";
import { type Item, type Table, wsKey } from "../../store/table.js";
import type { Validators } from "../../web/fetch.js";
import type { RenderMode } from "../../web/render/renderer.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import type { ChunkingSettings, Metadata } from "./attributes.js";
import type { RefreshSchedule, SourceStatus, SourceType } from "./fields.js";
import { refreshMarker, SCHEDULE_MARKER } from "./schedule.js";

/**
 * The source record, `KB#{id}` under the workspace's partition, and the workspace's counter of
 * searchable sources (`KBGEN`). `SourceRecords` is the only code that writes either: every
 * transition of a source's life is one of its methods, each one conditional write whose
 * condition is named here, and what follows a transition (the counter, the `source.failed`
 * webhook, the `SourcesFailed` metric, an upload's refund) follows it here, once.
 */

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
  /** The attributes search filters match (see `attributes.ts`). */
  metadata: Metadata;
  /** How its text is chunked, as set on create; `{}`: the service's defaults. */
  chunking: ChunkingSettings;
  /** When a URL source's page is rendered in a browser (lib/web/render); null for other types. */
  render: RenderMode | null;
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
      | "metadata"
      | "chunking"
      | "render"
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
  /** Absent on records written before attributes existed, like `chunking`. */
  metadata?: Metadata;
  chunking?: ChunkingSettings | null;
  /** Absent: `auto` (and on records written before rendering existed). */
  render?: RenderMode;
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
  /** The failed revision's message went to the dead-letter queue: a redrive may index it. */
  redrivable?: boolean;
}

export const SOURCE_PREFIX = "KB#";
export const sourceKey = (id: string) => `${SOURCE_PREFIX}${id}`;

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

/** `awaiting_upload`: a presigned upload's file has not arrived yet (see uploads.ts). */
export const AWAITING_UPLOAD = "awaiting_upload" satisfies SourceStatus;

/**
 * A counter per workspace that moves whenever the set of searchable sources may have changed: a
 * source indexed, reindexed, enabled, disabled or deleted. Writers bump it after their own write,
 * so a reader that sees the new value also sees the change.
 */
export const GENERATION_SK = "KBGEN";

/**
 * While a source is `indexing` it carries these attributes, which place it in the sparse `gsi1`
 * index: under `INDEXING#{shard}`, sorted by when it was queued, then, once the worker begins its
 * message's last delivery, under `INDEXING_LAST_ATTEMPT#{shard}`, sorted by when that began. The
 * shard is a hash of the workspace (`shardOf`), so no partition carries every tenant's indexing;
 * the watchdog reads every shard, and the unsharded partitions items written before the shards
 * still sit in, until they finish. Finishing, failing or stalling removes the attributes in the
 * same write. An awaited upload sits in the same index under its own partition (see uploads.ts).
 */
export const INDEXING_PARTITION = "INDEXING";
export const LAST_ATTEMPT_PARTITION = "INDEXING_LAST_ATTEMPT";
export const INDEXING_MARKER = ["gsi1pk", "gsi1sk"];
export const indexingMarker = (
  workspaceId: string,
  id: string,
  since: string,
  partition = INDEXING_PARTITION,
) => ({ gsi1pk: `${partition}#${shardOf(workspaceId)}`, gsi1sk: `${since}#${workspaceId}#${id}` });

/** Every `gsi1` partition a source of `partition` may sit in: each shard, then the unsharded one. */
export const indexingPartitions = (partition: string) => [
  ...Array.from({ length: GSI1_SHARDS }, (_, shard) => `${partition}#${shard}`),
  partition,
];

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
    metadata: item.metadata ?? {},
    chunking: item.chunking ?? {},
    render: item.type === "url" ? (item.render ?? "auto") : null,
  };
}

/** The source is still at this revision: no reindex replaced it meanwhile. */
export const atRevision = (revision: number): Condition => equals("revision", revision);

/** The source is at this revision and still `indexing` it: what a worker's writes require. */
export const stillIndexing = (revision: number): Condition =>
  and(atRevision(revision), equals("status", "indexing"));

/** This revision failed on its last delivery, and its message may be redriven. */
const redrivable = (revision: number): Condition =>
  and(atRevision(revision), equals("status", "failed"), equals("redrivable", true));

/** The source still awaits its presigned upload's file. */
const awaitingUpload = (): Condition => equals("status", AWAITING_UPLOAD);

/** The source awaits its file, and nobody took the arrived object over yet. */
const uploadUnclaimed = (): Condition => and(awaitingUpload(), missing("upload_received_at"));

/** The page was not found gone yet (records before refreshes lack the field). */
const notGone = (): Condition => or(missing("gone_at"), equals("gone_at", null));

/** Nothing holds the page any more: releasing its last holder removed the set. */
const unheld = (): Condition => missing("holders");

/** Why a revision failed: the source's `error_code` and `last_error`. */
export interface Failure {
  code: string;
  message: string;
  /** Its message went to the dead-letter queue, and a redrive may index it after all. */
  redrivable?: boolean;
}

/** What indexing a revision produced. */
export interface Indexed {
  chunkCount: number;
  chunksKey: string;
  contentHash: string;
  /** A fetched page's validators (URL sources). */
  validators?: Validators | undefined;
}

/** What refreshing an indexed page found, when it indexed nothing: see `markChecked`. */
export type Checked =
  | { kind: "unchanged" | "gone" }
  | { kind: "content"; validators?: Validators | undefined };

/** What can be changed of a source in place. */
export interface SourceChanges {
  enabled?: boolean | undefined;
  name?: string | undefined;
  refresh?: RefreshSchedule | null | undefined;
  /** Replaces the whole set of attributes (`{}` removes them all). */
  metadata?: Metadata | undefined;
}

/** A presigned upload's record, with what its upload took from the daily quota. */
export type UploadRecord = SourceItem & { bytes: number; quota?: QuotaCharge | undefined };

export interface SourceRecordDeps {
  table: Table;
  /** Told `source.failed` when a source fails. */
  events?: WebhookEvents | undefined;
  /** The workspace's cap on sources (the default limits when not given). */
  caps?: Caps | undefined;
}

/**
 * The only writer of source records: each method one transition of a source's life. Creating a
 * record takes a slot of the workspace's sources cap first, deleting one gives it back after.
 */
export class SourceRecords {
  private readonly caps: Caps;

  constructor(private readonly deps: SourceRecordDeps) {
    this.caps = deps.caps ?? new Caps(deps.table);
  }

  get(workspaceId: string, id: string): Promise<SourceItem | undefined> {
    return this.deps.table.get<SourceItem>(wsKey(workspaceId), sourceKey(id));
  }

  /**
   * Writes a new source's first record, in a slot of the sources cap (`limit_reached` when the
   * workspace holds its cap); false when one with its id exists.
   */
  async create(item: SourceItem): Promise<boolean> {
    await this.caps.take(item.workspaceId, "sources");
    if (await this.deps.table.create(item)) return true;
    await this.caps.release(item.workspaceId, "sources");
    return false;
  }

  /**
   * Puts the source back to `indexing` under the revision after `current`'s (a reindex or a
   * refresh; `snapshotKey`: a crawl's copy of the page to compare). What it had indexed keeps
   * answering meanwhile. Undefined when it was deleted or reindexed since `current` was read.
   */
  async startRevision(
    current: SourceItem,
    snapshotKey: string | undefined,
  ): Promise<SourceItem | undefined> {
    const { workspaceId, id } = current;
    const item = await this.deps.table.update<SourceItem>(
      current.pk,
      current.sk,
      {
        status: "indexing",
        revision: current.revision + 1,
        last_error: null,
        error_code: null,
        refresh_snapshot: snapshotKey,
        ...indexingMarker(workspaceId, id, new Date().toISOString()),
      },
      atRevision(current.revision),
      snapshotKey === undefined ? ["refresh_snapshot"] : [],
    );
    if (item && isSearchable(current) !== isSearchable(item)) await this.bump(workspaceId);
    return item;
  }

  /**
   * A revision that failed on its last delivery, its message back from the dead-letter queue
   * (`npm run redrive`): back to `indexing` for this try. False when it is not that revision, or
   * not redrivable.
   */
  async redrive(source: SourceItem): Promise<boolean> {
    const back = await this.deps.table.update<SourceItem>(
      source.pk,
      source.sk,
      {
        status: "indexing",
        last_error: null,
        error_code: null,
        redrivable: false,
        ...indexingMarker(source.workspaceId, source.id, new Date().toISOString()),
      },
      redrivable(source.revision),
    );
    // A source with chunks of an earlier revision answers searches again while it is indexed.
    if (back && isSearchable(back)) await this.bump(source.workspaceId);
    return back !== undefined;
  }

  /**
   * Records that the revision's last delivery begins (it moves to the last-attempt partition the
   * watchdog reads). False when the revision finished or was replaced meanwhile.
   */
  async markLastAttempt(source: SourceItem): Promise<boolean> {
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

  /**
   * The revision is indexed: the source goes live with these chunks (a URL source was checked
   * now too; its content changed unless the hash is the one it had). Undefined when the revision
   * was replaced or the source deleted.
   */
  async markIndexed(source: SourceItem, indexed: Indexed): Promise<SourceItem | undefined> {
    const now = new Date().toISOString();
    const done = await this.deps.table.update<SourceItem>(
      source.pk,
      source.sk,
      {
        status: "indexed",
        chunk_count: indexed.chunkCount,
        chunks_key: indexed.chunksKey,
        content_hash: indexed.contentHash,
        indexed_at: now,
        last_error: null,
        error_code: null,
        ...(source.type === "url"
          ? { last_checked_at: now, gone_at: null, ...validatorFields(indexed.validators) }
          : {}),
        ...(indexed.contentHash === source.content_hash ? {} : { last_changed_at: now }),
      },
      atRevision(source.revision),
      INDEXING_MARKER,
    );
    if (done) await this.bump(source.workspaceId);
    return done;
  }

  /**
   * A refresh of an indexed page that indexed nothing settles back to `indexed`, checked now:
   * the page unchanged (a 304), read again with the same content (its new validators kept), or
   * gone (since the first time it was found gone; what was indexed stays). False when the
   * revision finished or was replaced meanwhile.
   */
  async markChecked(source: SourceItem, found: Checked): Promise<boolean> {
    const now = new Date().toISOString();
    const gone = found.kind === "gone";
    const settled = await this.deps.table.update(
      source.pk,
      source.sk,
      {
        status: "indexed",
        last_checked_at: now,
        gone_at: gone ? (source.gone_at ?? now) : null,
        ...(found.kind === "content" ? validatorFields(found.validators) : {}),
      },
      stillIndexing(source.revision),
      [...INDEXING_MARKER, "refresh_snapshot"],
    );
    return settled !== undefined;
  }

  /**
   * Marks a page found gone (a crawl met 404 or 410 on it), the first time only: what was
   * indexed stays searchable until someone deletes it.
   */
  async markGone(workspaceId: string, id: string): Promise<void> {
    const now = new Date().toISOString();
    await this.deps.table.update(
      wsKey(workspaceId),
      sourceKey(id),
      { gone_at: now, last_checked_at: now },
      notGone(),
    );
  }

  /**
   * Fails the revision of `source`, only while `expected` holds (by default: the revision is
   * still `indexing`); a newer revision or a deleted source is left alone. Answers the failed
   * record, or undefined when nothing changed. Tells `source.failed`, counts `SourcesFailed`, and
   * moves the counter of a source that answered searches with an earlier revision: once each.
   */
  fail(
    source: SourceItem,
    failure: Failure,
    expected: Condition = stillIndexing(source.revision),
  ): Promise<SourceItem | undefined> {
    return this.failWhere(source, failure, expected, {});
  }

  /**
   * Fails an awaited upload (refused, or never sent), which then has no content, so nothing
   * posted later is ever read; its bytes go back to the upload quota. False when it was not
   * awaiting any more.
   */
  async failUpload(item: UploadRecord, failure: Failure): Promise<boolean> {
    const failed = await this.failWhere(
      item,
      failure,
      awaitingUpload(),
      { content_key: null },
      item,
    );
    return failed !== undefined;
  }

  /** Marks the arrived object as taken; false when another notification (or the watchdog) was first. */
  async claimUpload(item: UploadRecord): Promise<boolean> {
    const claimed = await this.deps.table.update(
      item.pk,
      item.sk,
      { upload_received_at: new Date().toISOString() },
      uploadUnclaimed(),
    );
    return claimed !== undefined;
  }

  /** Records the accepted copy of the upload as the source's content; false when not awaited any more. */
  async acceptUpload(item: UploadRecord, contentKey: string, file: StoredObject): Promise<boolean> {
    const accepted = await this.deps.table.update(
      item.pk,
      item.sk,
      { content_key: contentKey, accepted_file: file },
      awaitingUpload(),
    );
    return accepted !== undefined;
  }

  /**
   * Changes a source's name, whether it is enabled, its refresh schedule (with its place in the
   * schedule's index) or its attributes. Undefined when the source is gone.
   */
  async edit(
    workspaceId: string,
    id: string,
    changes: SourceChanges,
  ): Promise<SourceItem | undefined> {
    const schedule = changes.refresh;
    const item = await this.deps.table.update<SourceItem>(
      wsKey(workspaceId),
      sourceKey(id),
      {
        enabled: changes.enabled === undefined ? undefined : changes.enabled ? 1 : 0,
        name: changes.name,
        refresh: schedule,
        metadata: changes.metadata,
        ...(schedule ? refreshMarker(workspaceId, id, schedule) : {}),
      },
      undefined,
      schedule === null ? SCHEDULE_MARKER : [],
    );
    // The name, whether it is enabled and the attributes are what search reads from the table.
    if (item) await this.bump(workspaceId);
    return item;
  }

  /** Adds holders to a page; undefined when the source is gone. */
  hold(source: SourceItem, holders: Set<string>): Promise<SourceItem | undefined> {
    return this.deps.table.change<SourceItem>(source.pk, source.sk, { add: { holders } });
  }

  /**
   * Takes one holder off a page (an older record first gets the set its creator implies); a set
   * left empty is gone from the record. Undefined when the source is gone.
   */
  async release(source: SourceItem, holder: string): Promise<SourceItem | undefined> {
    const { table } = this.deps;
    if (!source.holders) {
      await table.change(source.pk, source.sk, { add: { holders: holdersOf(source) } });
    }
    return table.change<SourceItem>(source.pk, source.sk, { pull: { holders: new Set([holder]) } });
  }

  /** Deletes the record; false when it was gone. */
  delete(source: SourceItem): Promise<boolean> {
    return this.deleteWhere(source);
  }

  /** Deletes the record of a page nothing holds; false when it was gone or something holds it. */
  deleteUnheld(source: SourceItem): Promise<boolean> {
    return this.deleteWhere(source, unheld());
  }

  private async deleteWhere(source: SourceItem, condition?: Condition): Promise<boolean> {
    if (!(await this.deps.table.delete(source.pk, source.sk, condition))) return false;
    await this.caps.release(source.workspaceId, "sources");
    await this.bump(source.workspaceId);
    return true;
  }

  /** `upload`: an awaited upload failing, whose bytes all go back to the quota. */
  private async failWhere(
    source: SourceItem,
    failure: Failure,
    expected: Condition,
    also: Record<string, unknown>,
    upload?: UploadRecord,
  ): Promise<SourceItem | undefined> {
    const { table, events } = this.deps;
    const failed = await table.update<SourceItem>(
      source.pk,
      source.sk,
      {
        status: "failed",
        error_code: failure.code,
        last_error: failure.message,
        redrivable: failure.redrivable ?? false,
        ...also,
      },
      expected,
      INDEXING_MARKER,
    );
    if (!failed) return undefined;
    if (failed.chunks_key) await this.bump(source.workspaceId);
    if (upload) await this.refund(upload, upload.bytes);
    count("SourcesFailed");
    await events?.emit(source.workspaceId, "source.failed", { ...toPublic(failed) });
    return failed;
  }

  /** Gives back what the source's work did not use of its quota charge, once. */
  private refund(source: UploadRecord, unused: number): Promise<number> {
    const { table } = this.deps;
    return refundUnused(table, source, unused, async (quota, condition) => {
      return (await table.update(source.pk, source.sk, { quota }, condition)) !== undefined;
    });
  }

  /** Moves the workspace's counter of searchable sources (see `GENERATION_SK`). */
  private async bump(workspaceId: string): Promise<void> {
    await this.deps.table.increment(wsKey(workspaceId), GENERATION_SK, "generation", 1);
  }
}

/** A page's validators as the source record keeps them. */
const validatorFields = (validators: Validators | undefined) => ({
  etag: validators?.etag ?? null,
  last_modified: validators?.lastModified ?? null,
});
