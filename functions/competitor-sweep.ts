import type { ScheduledHandler } from "aws-lambda";
import { CHECK_CAPACITY } from "../lib/competitors/capacity.js";
import { sweepAll } from "../lib/competitors/sweep.js";
import { loadConfig, quotaLimits } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { Quotas, scheduledCharge } from "../lib/limits/quotas.js";
import { logger } from "../lib/log.js";
import { createStores } from "../lib/store/clients.js";

const config = loadConfig();
const { table, checksQueue } = createStores(config);
const quotas = new Quotas(table, quotaLimits(config));
const capacity = { ...CHECK_CAPACITY, spreadSeconds: config.SWEEP_SPREAD_SECONDS };

/**
 * Scheduled (hourly): queues one check per competitor due this hour by its cadence, of every
 * workspace, for the checks worker, spread over SWEEP_SPREAD_SECONDS (docs/operations.md#capacity).
 */
export const handler: ScheduledHandler = invocation(async (event) => {
  // Each check is taken from its workspace's daily quota, as a check-all's are; over it: skipped.
  const admit = scheduledCharge(quotas, "competitor_checks", "competitor sweep check");
  // The hour the run was scheduled for, not when it started: a late start checks the same ones.
  const at = new Date(Date.parse(event.time) || Date.now());
  const queued = await sweepAll(table, checksQueue, capacity, admit, at);
  logger.info("competitor sweep", { queued, at: at.toISOString() });
});
