import type { ScheduledHandler } from "aws-lambda";
import { loadConfig } from "../lib/config.js";
import { failStalledSources } from "../lib/knowledge/watchdog.js";
import { logger } from "../lib/log.js";
import { createStores } from "../lib/store/clients.js";

const config = loadConfig();
const { table } = createStores(config);

/** Scheduled: fails work that stopped making progress, so nothing stays `indexing` forever. */
export const handler: ScheduledHandler = async () => {
  const stalledSources = await failStalledSources(table, config.STALL_MINUTES * 60_000);
  logger.info("watchdog run", { stalledSources });
};
