import { type Config, capLimits } from "../config.js";
import { Crawler } from "../knowledge/crawl/crawler.js";
import { Sources } from "../knowledge/sources/sources.js";
import { Caps } from "../limits/caps.js";
import { createStores } from "../store/clients.js";
import { PoliteSession } from "../web/session.js";
import { fetcherOf } from "./fetcher.js";
import { rendererOf } from "./renderer.js";
import { webhookEventsOf } from "./webhook-events.js";

/** crawl-worker: one page per message, politely per host. */
export function crawlWorkerServices(config: Config) {
  const stores = createStores(config);
  const fetcher = fetcherOf(config);
  return new Crawler({
    table: stores.table,
    blobs: stores.blobs,
    queue: stores.crawlQueue,
    sources: new Sources({ ...stores, caps: new Caps(stores.table, capLimits(config)) }),
    fetcher,
    session: new PoliteSession(fetcher, { politenessMs: config.CRAWL_POLITENESS_MS }),
    renderer: rendererOf(config, fetcher),
    stallMs: config.CRAWL_STALL_SECONDS * 1000,
    watchSeconds: config.CRAWL_WATCH_SECONDS,
    events: webhookEventsOf(config, stores),
  });
}
