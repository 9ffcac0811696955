import { isDomainError } from "../../errors.js";
import type { Quotas } from "../../limits/quotas.js";
import { logger } from "../../log.js";
import type { Table } from "../../store/table.js";
import type { Crawls } from "../crawl/crawls.js";
import { CRAWL_PREFIX, type CrawlItem } from "../crawl/records.js";
import { REFRESH_SCHEDULES } from "../sources/fields.js";
import { dueSlot, refreshPartition } from "../sources/schedule.js";
import { SOURCE_PREFIX, type SourceItem, type Sources } from "../sources/sources.js";

export interface RefreshRunDeps {
  table: Table;
  sources: Sources;
  crawls: Crawls;
  /** Refreshes count against the daily page quota: a page each, a crawl its `maxPages`. */
  quotas: Quotas;
}

/** What one scheduled run did. */
export interface RefreshRun {
  /** URL sources queued for a check (or, failed ones, indexed again). */
  sources: number;
  /** Crawls started again. */
  crawls: number;
  /** Due, but left for their next slot: still busy, or the workspace's quota is spent. */
  skipped: number;
}

/**
 * The hourly refresh: every URL source and crawl whose schedule puts it in the hour `at` falls
 * in (`schedule.ts`: 24 slots a day, 168 a week, by a hash of its id) is refreshed. A URL source
 * is checked by the index worker (a conditional fetch; reindexed only when its content changed);
 * a crawl starts a new run with its settings, which refreshes the pages it finds, adds new ones
 * within its cap and marks those gone, its pages keeping the first crawl's id.
 */
export async function runDueRefreshes(deps: RefreshRunDeps, at = new Date()): Promise<RefreshRun> {
  const run: RefreshRun = { sources: 0, crawls: 0, skipped: 0 };
  for (const schedule of REFRESH_SCHEDULES) {
    const partition = refreshPartition(schedule, dueSlot(schedule, at));
    for (const item of await deps.table.allInIndex<SourceItem | CrawlItem>("gsi2", partition)) {
      try {
        const done = item.sk.startsWith(SOURCE_PREFIX)
          ? await refreshSource(deps, item as SourceItem)
          : item.sk.startsWith(CRAWL_PREFIX) && (await recrawl(deps, item as CrawlItem));
        if (!done) run.skipped++;
        else if (item.sk.startsWith(SOURCE_PREFIX)) run.sources++;
        else run.crawls++;
      } catch (err) {
        if (!isDomainError(err, "quota_exceeded")) throw err;
        logger.warn("scheduled refresh over quota", { pk: item.pk, sk: item.sk });
        run.skipped++;
      }
    }
  }
  logger.info("scheduled refresh", { ...run, at: at.toISOString() });
  return run;
}

async function refreshSource(deps: RefreshRunDeps, source: SourceItem): Promise<boolean> {
  if (source.status !== "indexed" && source.status !== "failed") return false;
  await deps.quotas.consume(source.workspaceId, "crawl_pages", 1);
  // An indexed page is compared with what it had; a failed one is indexed afresh.
  await deps.sources.reindex(source.workspaceId, source.id, {
    refresh: source.status === "indexed",
  });
  return true;
}

/** Starts the crawl's next run, unless the crawl or its last run is still going. */
async function recrawl(deps: RefreshRunDeps, crawl: CrawlItem): Promise<boolean> {
  if (crawl.status === "indexing") return false;
  const last = crawl.lastRunId && (await deps.crawls.get(crawl.workspaceId, crawl.lastRunId));
  if (last && last.status === "indexing") return false;
  const { seedUrl, maxPages, maxDepth, includeSubdomains, includePaths, excludePaths } = crawl;
  const quota = await deps.quotas.consume(crawl.workspaceId, "crawl_pages", maxPages);
  const next = await deps.crawls.start(
    crawl.workspaceId,
    { seedUrl, maxPages, maxDepth, includeSubdomains, includePaths, excludePaths },
    quota,
    { refreshOf: crawl.crawlId },
  );
  await deps.crawls.noteRun(crawl, next.crawlId);
  return true;
}
