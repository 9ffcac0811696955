import { logger } from "../../log.js";
import type { Blobs } from "../../store/blobs.js";
import type { Delivery, ExportMessage, Queue } from "../../store/queue.js";
import { BUNDLE_END, type BundleDeps, bundleLines } from "./bundle.js";
import type { Checkpoint, ExportItem, ExportJobs } from "./exports.js";
import { BUNDLE_CONTENT_TYPE, BUNDLE_START, headerLine, trailerLine } from "./format.js";

/**
 * The export worker's work on one message: the bundle written to S3 as one multipart upload, a
 * part at a time, with a checkpoint after each part (the parts so far and the reading position
 * after them). A message works for `sliceMs` at most, then saves, lets the job go and sends the
 * same message again to carry on, so no export is bound by one invocation's timeout, however
 * large the workspace (docs/decisions/0006-workspace-export.md). A worker that dies mid-slice
 * leaves its last checkpoint: its message, delivered again, rereads from there and writes the
 * same part numbers again, which replaces them.
 */

export interface BundleWriterSettings {
  /** Bytes a part holds before it is written: at least 5 MiB on S3, the last part excepted. */
  partBytes: number;
  /** Time one message works before it hands the rest on; at least one part is written. */
  sliceMs: number;
  /** How long a worker holds a job without saving: longer than an invocation can run. */
  leaseMs: number;
}

export interface BundleWriterDeps {
  jobs: ExportJobs;
  blobs: Blobs;
  bundle: BundleDeps;
  queue: Queue<ExportMessage>;
  settings: BundleWriterSettings;
  now?: () => number;
}

export type ExportOutcome = "ready" | "continues" | "gone" | "done already" | "busy" | "failed";

/** The longest delay SQS gives a message. */
const MAX_DELAY_SECONDS = 900;

/**
 * The size a part is written at: `partBytes`, one more `partBytes` every thousand parts. The job
 * record lists the parts (an ETag each, in an item of 400 KB at most, about 6,000 of them), and
 * S3 takes 10,000: growing parts reach about 190 GB of bundle at the 6,000th part.
 */
const partSize = (partBytes: number, partNumber: number) =>
  partBytes * (1 + Math.floor((partNumber - 1) / 1000));

/** Why a lease stopped being ours: another worker took the job over. */
class LeaseLost extends Error {}

/** Writes the next slice of an export's bundle (all of it, for a small workspace). */
export async function writeBundle(
  deps: BundleWriterDeps,
  message: ExportMessage,
  delivery: Delivery,
): Promise<ExportOutcome> {
  const { jobs } = deps;
  const now = deps.now ?? Date.now;
  const found = await jobs.find(message.workspaceId, message.exportId);
  if (!found) return "gone";
  if (found.status === "ready" || found.status === "failed") return "done already";
  const started = now();
  const taken = await jobs.take(found, started, started + deps.settings.leaseMs);
  if (!taken) {
    // Another delivery holds the job. Should its worker have died, nothing else would carry the
    // export on: this message comes back when that lease ends (SQS delays 15 minutes at most).
    const wait = Math.ceil((found.leaseUntil - started) / 1000) + 1;
    await deps.queue.send(message, Math.min(MAX_DELAY_SECONDS, Math.max(1, wait)));
    return "busy";
  }
  const held = { job: taken };
  try {
    return await writeSlice(deps, held, started, message);
  } catch (err) {
    if (err instanceof LeaseLost) return "busy";
    if (delivery.receiveCount >= delivery.maxReceiveCount) {
      logger.error("export failed", { ...message, error: err });
      await jobs.fail(held.job, "The export could not be written; start another");
      return "failed";
    }
    // Free for the message's next delivery, which carries on from the last checkpoint.
    await jobs.release(held.job).catch(() => undefined);
    throw err;
  }
}

/** Writes parts from the job's checkpoint on; `held.job` is the job as last saved. */
async function writeSlice(
  deps: BundleWriterDeps,
  held: { job: ExportItem },
  started: number,
  message: ExportMessage,
): Promise<ExportOutcome> {
  const { jobs, blobs, settings } = deps;
  const now = deps.now ?? Date.now;
  let job = held.job;
  const save = async (checkpoint: Checkpoint) => {
    const saved = await jobs.save(job, checkpoint, now() + settings.leaseMs);
    if (!saved) throw new LeaseLost();
    job = saved;
    held.job = saved;
    return saved;
  };
  if (job.completing) return complete(deps, job);
  const uploadId = job.uploadId ?? (await blobs.startUpload(job.objectKey, BUNDLE_CONTENT_TYPE));
  if (!job.uploadId) await save({ uploadId });

  const counts = { ...job.counts };
  let bytes = job.bytes;
  let lines: string[] = [];
  let buffered = 0;
  const add = (line: string) => {
    lines.push(`${line}\n`);
    buffered += Buffer.byteLength(line) + 1;
  };
  const flush = async (position: typeof job.position, extra: { completing?: boolean } = {}) => {
    const partNumber = job.parts.length + 1;
    const etag = await blobs.uploadPart(
      job.objectKey,
      uploadId,
      partNumber,
      Buffer.from(lines.join("")),
    );
    bytes += buffered;
    await save({
      parts: [...job.parts, { partNumber, etag }],
      position,
      counts: { ...counts },
      bytes,
      ...extra,
    });
    lines = [];
    buffered = 0;
  };

  const fromStart =
    job.parts.length === 0 &&
    job.position.section === BUNDLE_START.section &&
    job.position.cursor === null;
  if (fromStart) add(headerLine(job.workspaceId, job.exportId, job.startedAt ?? job.createdAt));
  for await (const line of bundleLines(deps.bundle, job.workspaceId, job.position)) {
    add(line.text);
    counts[line.kind]++;
    if (buffered < partSize(settings.partBytes, job.parts.length + 1)) continue;
    await flush(line.after);
    if (now() - started >= settings.sliceMs) {
      // The rest goes to the next message: this one ends within its slice.
      const released = await jobs.release(job);
      if (!released) return "busy";
      await deps.queue.send(message);
      return "continues";
    }
  }
  add(trailerLine(counts, new Date(now()).toISOString()));
  await flush(BUNDLE_END, { completing: true });
  return complete(deps, job);
}

/** Makes the object of the parts written and marks the job ready. */
async function complete(deps: BundleWriterDeps, job: ExportItem): Promise<ExportOutcome> {
  const { blobs, jobs } = deps;
  const now = deps.now ?? Date.now;
  try {
    await blobs.completeUpload(job.objectKey, job.uploadId ?? "", job.parts);
  } catch (err) {
    // Completed already, by the attempt that died before it could mark the job ready.
    if (!(await blobs.exists(job.objectKey))) throw err;
  }
  const ready = await jobs.finish(job, new Date(now()).toISOString());
  if (!ready) throw new LeaseLost();
  logger.info("export ready", {
    workspaceId: job.workspaceId,
    exportId: job.exportId,
    bytes: ready.bytes,
  });
  return "ready";
}
