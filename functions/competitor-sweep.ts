import type { ScheduledHandler } from "aws-lambda";
import { sweepAll } from "../lib/competitors/sweep.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { logger } from "../lib/log.js";
import { createStores } from "../lib/store/clients.js";

const { table, checksQueue } = createStores(loadConfig());

/** Scheduled (nightly): queues one check per competitor of every workspace for the checks worker. */
export const handler: ScheduledHandler = invocation(async () => {
  const queued = await sweepAll(table, checksQueue);
  logger.info("competitor sweep", { queued });
});
