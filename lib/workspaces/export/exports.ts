import { notFound } from "../../errors.js";
import { isId, newId } from "../../ids.js";
import type { UploadedPart } from "../../store/blobs.js";
import { and, type Condition, equals, lessThan, or } from "../../store/conditions.js";
import { TTL_ATTRIBUTE } from "../../store/schema.js";
import { type Item, type Table, wsKey } from "../../store/table.js";
import { BUNDLE_START, type BundlePosition, noRecords, type RecordCounts } from "./format.js";

/**
 * Export jobs, `EXPORT#{exportId}` under the workspace's partition: what the API answers about an
 * export, and the checkpoint its worker carries on from (the bundle's multipart upload, the parts
 * written and the reading position after them). The worker holds a job by a lease, so a message
 * delivered twice never writes the same part twice at once; each checkpoint is conditioned on
 * that lease.
 */

export type ExportStatus = "queued" | "running" | "ready" | "failed";

/**
 * The export worker's timeout: a job's lease lasts this long, so a worker that died holding it
 * (and can run no longer than this) never blocks the job's next message for longer.
 */
export const EXPORT_WORKER_TIMEOUT_SECONDS = 900;

/** Days a bundle is kept (the bucket's lifecycle expires `exports/` after this) and its job. */
export const EXPORT_RETENTION_DAYS = 7;

/** Where bundles live: outside `ws/`, so the bucket's lifecycle can expire them by prefix. */
export const EXPORTS_PREFIX = "exports/";
export const exportBlobPrefix = (workspaceId: string) => `${EXPORTS_PREFIX}ws/${workspaceId}/`;
const bundleKey = (workspaceId: string, exportId: string) =>
  `${exportBlobPrefix(workspaceId)}${exportId}.ndjson`;

const EXPORT_PREFIX = "EXPORT#";
const exportKey = (id: string) => `${EXPORT_PREFIX}${id}`;

export interface ExportItem extends Item {
  workspaceId: string;
  exportId: string;
  status: ExportStatus;
  createdAt: string;
  startedAt: string | null;
  completedAt: string | null;
  /** Records written so far (at the last checkpoint), by kind. */
  counts: RecordCounts;
  /** Bytes of the bundle written so far. */
  bytes: number;
  error: string | null;
  objectKey: string;
  uploadId: string | null;
  parts: UploadedPart[];
  /** Where reading carries on: after the records of the parts written. */
  position: BundlePosition;
  /** Every part is written and the upload is being completed. */
  completing: boolean;
  /** Epoch milliseconds until which a worker holds the job; 0 when none does. */
  leaseUntil: number;
}

/** What the worker saves at a checkpoint. */
export type Checkpoint = Partial<
  Pick<ExportItem, "uploadId" | "parts" | "position" | "counts" | "bytes" | "completing">
>;

/** The job is queued or running: neither ready nor failed. */
const unfinished = (): Condition => or(equals("status", "queued"), equals("status", "running"));

/** The lease is still the one a worker took: nobody took over since. */
const leaseHeld = (until: number): Condition => equals("leaseUntil", until);

export class ExportJobs {
  constructor(private readonly table: Table) {}

  /** A new job, queued, reading from the bundle's start. */
  async create(workspaceId: string): Promise<ExportItem> {
    const exportId = newId("export");
    const now = new Date();
    const item: ExportItem = {
      pk: wsKey(workspaceId),
      sk: exportKey(exportId),
      workspaceId,
      exportId,
      status: "queued",
      createdAt: now.toISOString(),
      startedAt: null,
      completedAt: null,
      counts: noRecords(),
      bytes: 0,
      error: null,
      objectKey: bundleKey(workspaceId, exportId),
      uploadId: null,
      parts: [],
      position: BUNDLE_START,
      completing: false,
      leaseUntil: 0,
      // A day past the bundle's own expiry, counted from the start: the job outlives its bundle.
      [TTL_ATTRIBUTE]: Math.floor(now.getTime() / 1000) + (EXPORT_RETENTION_DAYS + 1) * 86_400,
    };
    await this.table.put(item);
    return item;
  }

  async find(workspaceId: string, exportId: string): Promise<ExportItem | undefined> {
    return isId("export", exportId)
      ? this.table.get<ExportItem>(wsKey(workspaceId), exportKey(exportId))
      : undefined;
  }

  /** The job; `not_found` for an id this workspace has no export of. */
  async get(workspaceId: string, exportId: string): Promise<ExportItem> {
    const item = await this.find(workspaceId, exportId);
    if (!item) throw notFound("export", exportId);
    return item;
  }

  /**
   * Takes an unfinished job until `until` (epoch ms) unless another worker holds it; answers the
   * job as taken, running, or undefined.
   */
  take(item: ExportItem, now: number, until: number): Promise<ExportItem | undefined> {
    return this.table.update<ExportItem>(
      item.pk,
      item.sk,
      {
        status: "running",
        startedAt: item.startedAt ?? new Date(now).toISOString(),
        leaseUntil: until,
      },
      and(unfinished(), lessThan("leaseUntil", now)),
    );
  }

  /** Saves a checkpoint and extends the lease to `until`; undefined when the lease was lost. */
  save(item: ExportItem, checkpoint: Checkpoint, until: number): Promise<ExportItem | undefined> {
    return this.table.update<ExportItem>(
      item.pk,
      item.sk,
      { ...checkpoint, leaseUntil: until },
      leaseHeld(item.leaseUntil),
    );
  }

  /** Lets go of the job, for the next message to take it; undefined when the lease was lost. */
  release(item: ExportItem): Promise<ExportItem | undefined> {
    return this.table.update<ExportItem>(
      item.pk,
      item.sk,
      { leaseUntil: 0 },
      leaseHeld(item.leaseUntil),
    );
  }

  /** The bundle is complete: the job is ready for download. */
  finish(item: ExportItem, completedAt: string): Promise<ExportItem | undefined> {
    return this.table.update<ExportItem>(
      item.pk,
      item.sk,
      { status: "ready", completedAt, completing: false, leaseUntil: 0 },
      leaseHeld(item.leaseUntil),
      ["uploadId", "parts"],
    );
  }

  /** The export cannot be written (or queued): failed, with why, unless it finished meanwhile. */
  fail(item: ExportItem, error: string): Promise<ExportItem | undefined> {
    return this.table.update<ExportItem>(
      item.pk,
      item.sk,
      { status: "failed", error, completedAt: new Date().toISOString(), leaseUntil: 0 },
      unfinished(),
    );
  }
}
