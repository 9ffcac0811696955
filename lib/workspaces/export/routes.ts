import { serviceUnavailable } from "../../errors.js";
import { createModule } from "../../http/app.js";
import type { Quotas } from "../../limits/quotas.js";
import { logger } from "../../log.js";
import type { Blobs } from "../../store/blobs.js";
import type { ExportMessage, Queue } from "../../store/queue.js";
import { getExport, startExport } from "./contract.js";
import { EXPORT_RETENTION_DAYS, type ExportItem, type ExportJobs } from "./exports.js";

export interface ExportRoutesDeps {
  jobs: ExportJobs;
  blobs: Blobs;
  queue: Queue<ExportMessage>;
  quotas: Quotas;
  /** How long a download URL works. */
  urlSeconds: number;
}

const DAY_MS = 86_400_000;

/** The export as the API shows it, with a fresh download URL once it is ready. */
async function toPublic(item: ExportItem, blobs: Blobs, urlSeconds: number) {
  const availableUntil = item.completedAt
    ? new Date(Date.parse(item.completedAt) + EXPORT_RETENTION_DAYS * DAY_MS)
    : null;
  const expired = item.status === "ready" && availableUntil !== null && availableUntil < new Date();
  const ready = item.status === "ready" && !expired;
  return {
    exportId: item.exportId,
    status: expired ? ("expired" as const) : item.status,
    createdAt: item.createdAt,
    completedAt: item.completedAt,
    counts: item.counts,
    bytes: item.bytes,
    error: item.error,
    download: ready
      ? {
          url: await blobs.presignGet(
            item.objectKey,
            urlSeconds,
            `kb-intel-export-${item.exportId}.ndjson`,
          ),
          expiresAt: new Date(Date.now() + urlSeconds * 1000).toISOString(),
          contentType: "application/x-ndjson" as const,
        }
      : null,
    availableUntil: item.status === "ready" ? (availableUntil?.toISOString() ?? null) : null,
  };
}

/** Workspace exports: /api/export, /api/export/{exportId}. */
export function exportRoutes({ jobs, blobs, queue, quotas, urlSeconds }: ExportRoutesDeps) {
  const app = createModule();

  app.openapi(startExport, async (c) => {
    const workspaceId = c.get("workspaceId");
    await quotas.consume(workspaceId, "exports");
    const job = await jobs.create(workspaceId);
    try {
      await queue.send({ kind: "export", workspaceId, exportId: job.exportId });
    } catch (err) {
      logger.error("export could not be queued", {
        workspaceId,
        exportId: job.exportId,
        error: err,
      });
      await jobs.fail(job, "The export could not be queued; start another");
      throw serviceUnavailable("The export could not be queued; try again");
    }
    return c.json(await toPublic(job, blobs, urlSeconds), 202);
  });

  app.openapi(getExport, async (c) => {
    const job = await jobs.get(c.get("workspaceId"), c.req.valid("param").exportId);
    return c.json(await toPublic(job, blobs, urlSeconds), 200);
  });

  return app;
}
