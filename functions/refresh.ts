import type { ScheduledHandler } from "aws-lambda";
import { refreshServices } from "../lib/compose/refresh.js";
import { loadConfig } from "../lib/config.js";
import { invocation } from "../lib/invocation.js";
import { runDueRefreshes } from "../lib/knowledge/refresh/run.js";

const services = refreshServices(loadConfig());

/**
 * Scheduled (hourly): refreshes the URL sources and crawls whose daily or weekly slot is this
 * hour; the index and crawl workers do the fetching.
 */
export const handler: ScheduledHandler = invocation(async (event) => {
  await runDueRefreshes(services, new Date(event.time));
});
