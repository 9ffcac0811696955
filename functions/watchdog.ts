import type { ScheduledHandler } from "aws-lambda";
import { loadConfig } from "../lib/config.js";
import { Sources } from "../lib/knowledge/sources/sources.js";
import { failStalledSources } from "../lib/knowledge/sources/watchdog.js";
import { Uploads, uploadSettings } from "../lib/knowledge/uploads/uploads.js";
import { logger } from "../lib/log.js";
import { createStores } from "../lib/store/clients.js";

const config = loadConfig();
const stores = createStores(config);
const uploads = new Uploads({ ...stores, sources: new Sources(stores) }, uploadSettings(config));

/**
 * Scheduled: fails work that stopped making progress, so nothing stays `indexing` forever, and
 * presigned uploads that never arrived (or queues those whose notification was lost).
 * Crawls watch themselves through their own queue.
 */
export const handler: ScheduledHandler = async () => {
  const stalledSources = await failStalledSources(stores.table, {
    queuedMs: config.STALL_MINUTES * 60_000,
    lastAttemptMs: config.LAST_ATTEMPT_STALL_MINUTES * 60_000,
  });
  const overdueUploads = await uploads.expire();
  logger.info("watchdog run", { stalledSources, overdueUploads });
};
