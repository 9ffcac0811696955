import type { ScheduledHandler } from "aws-lambda";
import { uploadServices } from "../lib/compose/uploads.js";
import { loadConfig, QUEUE_RETENTION_DAYS } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { failStalledSources } from "../lib/knowledge/sources/watchdog.js";
import { logger } from "../lib/log.js";

const config = loadConfig();
const { stores, uploads, events } = uploadServices(config);

/**
 * Scheduled: fails work that stopped making progress, so nothing stays `indexing` forever, and
 * presigned uploads that never arrived (or queues those whose notification was lost).
 * Crawls watch themselves through their own queue.
 */
export const handler: ScheduledHandler = invocation(async () => {
  const stalledSources = await failStalledSources(
    stores.table,
    {
      queuedMs: QUEUE_RETENTION_DAYS * 86_400_000,
      lastAttemptMs: config.LAST_ATTEMPT_STALL_MINUTES * 60_000,
    },
    Date.now(),
    events,
  );
  const overdueUploads = await uploads.expire();
  logger.info("watchdog run", { stalledSources, overdueUploads });
});
