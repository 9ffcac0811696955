import { limitsFrom } from "../competitors/limits.js";
import { createCompetitorServices } from "../competitors/services.js";
import type { Config } from "../config.js";
import { createStores } from "../store/clients.js";
import { fetcherOf } from "./fetcher.js";

/** competitor-check-worker: queued checks, with the configured (longer) limits. */
export function checkWorkerServices(config: Config) {
  const { table, blobs } = createStores(config);
  return createCompetitorServices({
    table,
    blobs,
    fetcher: fetcherOf(config),
    limits: limitsFrom(config),
  });
}
