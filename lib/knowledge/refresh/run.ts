import { mapLimit } from "../../async.js";
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

/** Due items refreshed at once: the run's bound on its load on the table, queues and quotas. */
export const REFRESH_LANES = 8;

/**
 * The hourly refresh: every URL source and crawl whose schedule puts it in the hour `at` falls
 * in (`schedule.ts`: 24 slots a day, 168 a week, by a hash of its id) is refreshed. A URL source
 * is checked by the index worker (a conditional fetch; reindexed only when its content changed);
 * a crawl starts a new run with its settings, which refreshes the pages it finds, adds new ones
 * within its cap and marks those gone, its pages keeping the first crawl's id.
 *
 * The due items are refreshed `lanes` at a time, taken in turns across workspaces (each
 * workspace's first, then each one's second, ...), starting each hour at another workspace: a
 * tenant with thousands of items due shares the run with the others instead of going before
 * them, and if the run is cut short, it is not the same tenants every hour that wait for their
 * next slot. An item that throws does not stop the others; the run throws the first error after.
 */
export async function runDueRefreshes(
  deps: RefreshRunDeps,
  at = new Date(),
  lanes = REFRESH_LANES,
): Promise<RefreshRun> {
  const run: RefreshRun = { sources: 0, crawls: 0, skipped: 0 };
  const due: Array<SourceItem | CrawlItem> = [];
  for (const schedule of REFRESH_SCHEDULES) {
    const partition = refreshPartition(schedule, dueSlot(schedule, at));
    due.push(...(await deps.table.allInIndex<SourceItem | CrawlItem>("gsi2", partition)));
  }
  const errors: unknown[] = [];
  await mapLimit(inTurns(due, Math.floor(at.getTime() / 3_600_000)), lanes, async (item) => {
    try {
      const done = item.sk.startsWith(SOURCE_PREFIX)
        ? await refreshSource(deps, item as SourceItem)
        : item.sk.startsWith(CRAWL_PREFIX) && (await recrawl(deps, item as CrawlItem));
      if (!done) run.skipped++;
      else if (item.sk.startsWith(SOURCE_PREFIX)) run.sources++;
      else run.crawls++;
    } catch (err) {
      if (!isDomainError(err, "quota_exceeded")) {
        errors.push(err);
        logger.error("scheduled refresh of an item failed", { pk: item.pk, sk: item.sk });
        return;
      }
      logger.warn("scheduled refresh over quota", { pk: item.pk, sk: item.sk });
      run.skipped++;
    }
  });
  logger.info("scheduled refresh", { ...run, failed: errors.length, at: at.toISOString() });
  if (errors.length > 0) throw errors[0];
  return run;
}

/**
 * The items in turns across their workspaces: each workspace's first item, then each one's
 * second, and so on, the workspaces starting at `turn` (mod their number).
 */
export function inTurns<T extends { workspaceId: string }>(items: T[], turn: number): T[] {
  const byWorkspace = new Map<string, T[]>();
  for (const item of items) {
    const list = byWorkspace.get(item.workspaceId);
    if (list) list.push(item);
    else byWorkspace.set(item.workspaceId, [item]);
  }
  const lists = [...byWorkspace.values()];
  const first = lists.length > 0 ? turn % lists.length : 0;
  const ordered = [...lists.slice(first), ...lists.slice(0, first)];
  const out: T[] = [];
  for (let i = 0; out.length < items.length; i++) {
    for (const list of ordered) {
      const item = list[i];
      if (item) out.push(item);
    }
  }
  return out;
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
  const { metadata, chunking, render } = crawl;
  const quota = await deps.quotas.consume(crawl.workspaceId, "crawl_pages", maxPages);
  const next = await deps.crawls.start(
    crawl.workspaceId,
    {
      seedUrl,
      maxPages,
      maxDepth,
      includeSubdomains,
      includePaths,
      excludePaths,
      metadata,
      chunking,
      render,
    },
    quota,
    { refreshOf: crawl.crawlId },
  );
  await deps.crawls.noteRun(crawl, next.crawlId);
  return true;
}
