import { mapLimit } from "../../async.js";
import type { Config } from "../../config.js";
import { conflict, DomainError } from "../../errors.js";
import { mediaType } from "../../files/types.js";
import { newId } from "../../ids.js";
import type { Caps } from "../../limits/caps.js";
import type { QuotaCharge } from "../../limits/quotas.js";
import { logger } from "../../log.js";
import type { Blobs, StoredObject } from "../../store/blobs.js";
import { presignPost } from "../../store/presigned-post.js";
import { TABLE_INDEXES } from "../../store/schema.js";
import type { Table } from "../../store/table.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import type { ChunkingSettings, Metadata } from "../sources/attributes.js";
import { AWAITING_UPLOAD, type SourceItem, SourceRecords } from "../sources/records.js";
import { newSourceItem, type Sources } from "../sources/sources.js";
import { acceptFile, parsePresignedKey, presignedFileKey, storedFileKey } from "./files.js";

/**
 * Presigned uploads: a file source is recorded as `awaiting_upload` with a presigned POST whose
 * policy fixes the object key, its exact length and its Content-Type; the bucket's ObjectCreated
 * notification (through a queue) then starts indexing, after checking the stored object against
 * the declaration: S3 enforces the policy, but a store that does not (s3rver alone) must not be
 * trusted with it, so the check stands on its own. A watchdog fails uploads
 * that never came, and recovers those whose notification was lost.
 *
 * An accepted upload is final: the form can write its key again until it expires, so the arrived
 * object is first copied to a key no form can write, and that copy is what is checked, recorded
 * (`accepted_file`) and indexed, every time. Whatever is posted to the form later is dropped.
 * Uploads that fail (wrong size or type, never sent) give their bytes back to the daily quota.
 */

export { AWAITING_UPLOAD } from "../sources/records.js";

/**
 * While awaiting its file, a source sits in the sparse `gsi1` index under this partition, sorted
 * by its deadline: the watchdog finds overdue uploads there without scanning. Indexing moves it
 * to the `INDEXING` partition (Sources.reindex), failing removes it.
 */
const AWAITING_UPLOAD_PARTITION = "AWAITING_UPLOAD";
const GSI1 = TABLE_INDEXES[0];

export interface UploadSettings {
  /** Largest file accepted, in bytes. */
  maxBytes: number;
  /** How long the presigned POST can be used. */
  urlTtlSeconds: number;
  /** Time after the URL expires for an upload started just before to finish. */
  graceSeconds: number;
}

/** The upload settings of a configuration. */
export function uploadSettings(config: Config): UploadSettings {
  return {
    maxBytes: config.MAX_UPLOAD_BYTES,
    urlTtlSeconds: config.UPLOAD_URL_TTL_SECONDS,
    graceSeconds: config.UPLOAD_GRACE_SECONDS,
  };
}

export interface UploadRequest {
  filename: string;
  contentType: string;
  bytes: number;
  /** Display name; the file name when absent. */
  name?: string | undefined;
  metadata?: Metadata | undefined;
  chunking?: ChunkingSettings | undefined;
}

export interface PendingUpload {
  id: string;
  uploadUrl: string;
  /** Form fields to send, in order, before the `file` field. */
  fields: Record<string, string>;
  method: "POST";
  expiresAt: string;
}

/** A file source's record with what its upload must match (kept after the upload, for reference). */
export interface UploadItem extends SourceItem {
  bytes: number;
  content_type: string;
  upload_expires_at: string;
  /** Set by whoever takes the arrived object over, so duplicate notifications do nothing. */
  upload_received_at?: string;
  /** What the upload took from the daily upload quota, returned if the file is refused or never sent. */
  quota?: QuotaCharge;
}

/** What handling an object-created notification did. */
export type UploadOutcome = "queued" | "rejected" | "failed" | "ignored";

export interface UploadDeps {
  table: Table;
  blobs: Blobs;
  sources: Sources;
  /** Told `source.failed` when an upload is refused or never arrives. */
  events?: WebhookEvents | undefined;
  /** The workspace caps (an awaited upload is a source); the default limits when not given. */
  caps?: Caps | undefined;
}

export class Uploads {
  private readonly records: SourceRecords;

  constructor(
    private readonly deps: UploadDeps,
    private readonly settings: UploadSettings,
  ) {
    this.records = new SourceRecords(deps);
  }

  /** Records a file source awaiting its upload and answers the presigned POST for it. */
  /** `reserve` runs once the request is accepted, before anything is written (a quota). */
  async create(
    workspaceId: string,
    request: UploadRequest,
    reserve: (bytes: number) => Promise<QuotaCharge | undefined> = async () => undefined,
  ): Promise<PendingUpload> {
    const { blobs } = this.deps;
    const { urlTtlSeconds, graceSeconds, maxBytes } = this.settings;
    const file = acceptFile(request, maxBytes);
    const quota = await reserve(request.bytes);
    const id = newId("source");
    const key = presignedFileKey(workspaceId, id);
    const now = Date.now();
    const expiresAt = new Date(now + urlTtlSeconds * 1000).toISOString();
    const deadline = new Date(now + (urlTtlSeconds + graceSeconds) * 1000).toISOString();
    const { url, fields } = await presignPost(blobs, key, {
      bytes: request.bytes,
      contentType: file.contentType,
      expiresInSeconds: urlTtlSeconds,
    });
    const item: UploadItem = {
      ...newSourceItem(
        workspaceId,
        {
          id,
          type: "file",
          name: request.name?.trim() || file.filename,
          source_url_or_path: file.filename,
          content_key: key,
          metadata: request.metadata,
          chunking: request.chunking,
        },
        new Date(now).toISOString(),
      ),
      status: AWAITING_UPLOAD,
      bytes: request.bytes,
      content_type: file.contentType,
      upload_expires_at: expiresAt,
      ...(quota ? { quota } : {}),
      [GSI1.partitionKey]: AWAITING_UPLOAD_PARTITION,
      [GSI1.sortKey]: `${deadline}#${workspaceId}#${id}`,
    };
    if (!(await this.records.create(item))) {
      throw conflict(`A knowledge source with id ${id} exists already`);
    }
    return { id, uploadUrl: url, fields, method: "POST", expiresAt };
  }

  /**
   * Handles an ObjectCreated notification for a key. Only the first notification for an awaiting
   * upload acts: it takes the object over, checks it against the declaration, then fails the
   * source (and drops the object) or queues its indexing.
   */
  async complete(key: string): Promise<UploadOutcome> {
    const owner = parsePresignedKey(key);
    if (!owner) return "ignored";
    const item = (await this.records.get(owner.workspaceId, owner.id)) as UploadItem | undefined;
    if (!item || item.content_key !== key) {
      // The source was deleted, or its upload was settled (accepted and kept elsewhere, or
      // failed) before this object came: it is nobody's content, so keep nothing of it.
      await this.deps.blobs.delete([key]);
      return "ignored";
    }
    if (item.status !== AWAITING_UPLOAD || item.upload_received_at) return "ignored";
    if (!(await this.deps.blobs.exists(key)) || !(await this.records.claimUpload(item))) {
      return "ignored";
    }
    return this.accept(item);
  }

  /**
   * For the scheduled watchdog: settles uploads past their deadline. One whose object is there
   * (its notification was lost, or its handler died) goes on as if notified; one without fails
   * with `upload_expired`.
   */
  async expire(now = Date.now()): Promise<{ expired: number; recovered: number }> {
    const counts = { expired: 0, recovered: 0 };
    const before = new Date(now).toISOString();
    for (;;) {
      const due = await this.deps.table.queryIndex<UploadItem>(
        GSI1.name,
        AWAITING_UPLOAD_PARTITION,
        before,
        100,
      );
      const outcomes = await mapLimit(due, 8, (item) => this.settle(item));
      let progress = 0;
      for (const outcome of outcomes) {
        if (outcome === "skipped") continue;
        counts[outcome]++;
        progress++;
      }
      // A full page that settled nothing is the index lagging behind our own writes: stop here.
      if (due.length < 100 || progress === 0) return counts;
    }
  }

  private async settle(overdue: UploadItem): Promise<"expired" | "recovered" | "skipped"> {
    const item = await this.deps.table.get<UploadItem>(overdue.pk, overdue.sk);
    if (!item || item.status !== AWAITING_UPLOAD || !item.content_key) return "skipped";
    if (!(await this.deps.blobs.exists(item.content_key))) {
      const expired = await this.fail(
        item,
        "upload_expired",
        `No file was uploaded before the upload URL expired at ${item.upload_expires_at}; create a new upload`,
      );
      return expired ? "expired" : "skipped";
    }
    // Claimed earlier by a handler that died before finishing: take over.
    if (!item.upload_received_at && !(await this.records.claimUpload(item))) return "skipped";
    const outcome = await this.accept(item);
    return outcome === "ignored" ? "skipped" : "recovered";
  }

  /**
   * Copies the arrived object to the source's own key, checks the copy against the declaration,
   * and records the copy as the source's content (`accepted_file`) before queueing it.
   */
  private async accept(item: UploadItem): Promise<UploadOutcome> {
    const { blobs } = this.deps;
    const upload = item.content_key as string;
    const kept = storedFileKey(item.workspaceId, item.id);
    // Gone between the check and the copy: the watchdog settles the upload at its deadline.
    if (!(await blobs.copy(upload, kept))) return "ignored";
    const copy = await blobs.head(kept);
    // Gone right after the copy: only deleting the source removes it.
    if (!copy) return "ignored";
    const problem = mismatch(item, copy);
    if (problem) {
      await this.fail(item, "upload_mismatch", problem);
      await blobs.delete([upload, kept]);
      return "rejected";
    }
    const accepted = await this.records.acceptUpload(item, kept, copy);
    await blobs.delete(accepted ? [upload] : [upload, kept]);
    if (!accepted) return "ignored";
    try {
      await this.deps.sources.reindex(item.workspaceId, item.id);
      return "queued";
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      // Not found: deleted meanwhile. Unavailable: the source is failed already, telling the user
      // to reindex.
      if (err.code === "service_unavailable") {
        logger.error("upload could not be queued", { sourceId: item.id });
      }
      return err.code === "not_found" ? "ignored" : "failed";
    }
  }

  /**
   * Fails an awaiting upload (`SourceRecords.failUpload`: it loses its content, its bytes go back
   * to the upload quota, `source.failed` is told). False when it was not awaiting any more.
   */
  private fail(item: UploadItem, code: string, message: string): Promise<boolean> {
    return this.records.failUpload(item, { code, message });
  }
}

/** Why a stored object does not match its declaration, or undefined when it does. */
function mismatch(item: UploadItem, object: StoredObject): string | undefined {
  if (object.bytes !== item.bytes) {
    return `The uploaded file has ${object.bytes} bytes, not the ${item.bytes} declared; create a new upload`;
  }
  const type = mediaType(object.contentType);
  if (type !== item.content_type) {
    return `The uploaded file was sent as ${type || "no content type"}, not the declared ${item.content_type}; create a new upload`;
  }
  return undefined;
}
