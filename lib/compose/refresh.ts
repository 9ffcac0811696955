import { type Config, capLimits, quotaLimits } from "../config.js";
import { Crawls } from "../knowledge/crawl/crawls.js";
import { Sources } from "../knowledge/sources/sources.js";
import { Caps } from "../limits/caps.js";
import { Quotas } from "../limits/quotas.js";
import { createStores } from "../store/clients.js";

/** refresh: the scheduled refresh of URL sources and crawls, charged to the page quota. */
export function refreshServices(config: Config) {
  const stores = createStores(config);
  return {
    table: stores.table,
    sources: new Sources({ ...stores, caps: new Caps(stores.table, capLimits(config)) }),
    crawls: new Crawls({
      table: stores.table,
      queue: stores.crawlQueue,
      watchSeconds: config.CRAWL_WATCH_SECONDS,
    }),
    quotas: new Quotas(stores.table, quotaLimits(config)),
  };
}
