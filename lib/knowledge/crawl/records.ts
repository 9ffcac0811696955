import { type QuotaCharge, refundUnused } from "../../limits/quotas.js";
import {
  and,
  type Condition,
  contains,
  equals,
  missing,
  not,
  or,
  sizeBelow,
} from "../../store/conditions.js";
import { TTL_ATTRIBUTE } from "../../store/schema.js";
import { type Item, type Page, type Table, wsKey } from "../../store/table.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import type { RefreshSchedule } from "../sources/fields.js";
import { refreshMarker, SCHEDULE_MARKER } from "../sources/schedule.js";

/**
 * The crawl record, `CRAWL#{crawlId}` under the workspace's partition: a crawl's settings, its
 * counters, and `slots`, the string set of pages that hold one of its `maxPages` index slots.
 * Adding to a set is idempotent and its size can be a condition, so "exactly maxPages" survives
 * retries without transactions. `CrawlRecords` is the only code that writes it.
 *
 * Counters are bumped after the single-item writes they count (see `frontier.ts`); a crash
 * between the two can leave them short, which the watchdog repairs by recounting the pages.
 */

export type CrawlStatus = "indexing" | "completed" | "failed" | "cancelled";

export interface CrawlSettings {
  seedUrl: string;
  maxPages: number;
  maxDepth: number;
  includeSubdomains: boolean;
  includePaths: string[];
  excludePaths: string[];
}

export interface CrawlCounts {
  pagesDiscovered: number;
  pagesIndexed: number;
  pagesFailed: number;
  pagesSkipped: number;
}

export interface CrawlItem extends Item, CrawlSettings, CrawlCounts {
  workspaceId: string;
  crawlId: string;
  status: CrawlStatus;
  startedAt: string;
  finishedAt: string | null;
  /** Last progress: a page finished or was found. The watchdog reads it. */
  updatedAt: string;
  lastError: string | null;
  slots?: Set<string>;
  /** How often the watchdog re-sent the messages of stuck pages. */
  nudges?: number;
  /** The `maxPages` taken from the daily page quota at the start; what no page used is returned. */
  quota?: QuotaCharge;
  /** Run again on this schedule (a new crawl of the same settings each time). */
  refresh?: RefreshSchedule | null;
  /** For a scheduled run: the crawl it repeats, whose id its pages' sources keep. */
  refreshOf?: string | null;
  /** For a scheduled crawl: its latest run, which must end before the next one starts. */
  lastRunId?: string;
}

/**
 * How long a crawl's helper items (content claims `CRAWLHASH#`, query variants `CRAWLPATH#`, host
 * paces `CRAWLHOST#`) outlive their last write. They matter only while the crawl runs, and the
 * longest crawl the limits allow runs about 3.5 days: at most 10,000 URLs (`maxDiscovered`) one
 * host's pace apart, at most 30 s (`MAX_GAP_MS`); a crawl idle for CRAWL_STALL_SECONDS fails. One
 * that expired early costs little: a duplicate page indexed, a pace starting over, 20 more query
 * variants. When a crawl ends its watch expires them at once (`Crawler`). The crawl item and its
 * `CRAWLPAGE#` items never expire: they are its report, and say which sources it owns.
 */
export const CRAWL_HELPER_DAYS = 4;

/** The expiry attribute a helper item is written with at `nowMs`. */
export const helperExpiry = (nowMs = Date.now()) => ({
  [TTL_ATTRIBUTE]: Math.floor(nowMs / 1000) + CRAWL_HELPER_DAYS * 86_400,
});

/** The expiry attribute that lets a helper item go at `nowMs`: its crawl has ended. */
export const expiredNow = (nowMs = Date.now()) => ({ [TTL_ATTRIBUTE]: Math.floor(nowMs / 1000) });

export const CRAWL_PREFIX = "CRAWL#";
export const crawlKey = (crawlId: string) => `${CRAWL_PREFIX}${crawlId}`;

/** The crawl is running: only a running crawl ends, or gives out slots. */
export const crawlRunning = (): Condition => equals("status", "indexing");

/** The crawl was not cancelled: a cancelled crawl's counters stay as they were then. */
const notCancelled = (): Condition => not(equals("status", "cancelled"));

/** The crawl has a slot for the page: one free, or the one the page holds already. */
const slotFor = (pageKey: string, maxPages: number): Condition =>
  or(missing("slots"), sizeBelow("slots", maxPages), contains("slots", pageKey));

export interface CrawlRecordDeps {
  table: Table;
  /** Told `crawl.completed` when a crawl ends, however it ends. */
  events?: WebhookEvents | undefined;
}

/** The only writer of crawl records: each method one transition of a crawl's life. */
export class CrawlRecords {
  constructor(private readonly deps: CrawlRecordDeps) {}

  get(workspaceId: string, crawlId: string): Promise<CrawlItem | undefined> {
    return this.deps.table.get<CrawlItem>(wsKey(workspaceId), crawlKey(crawlId));
  }

  /** A workspace's crawls, newest first. */
  list(workspaceId: string, limit: number, cursor?: string): Promise<Page<CrawlItem>> {
    return this.deps.table.page<CrawlItem>({
      pk: wsKey(workspaceId),
      skPrefix: CRAWL_PREFIX,
      limit,
      cursor,
      newestFirst: true,
    });
  }

  /** Writes a new crawl; false when one with its id exists. */
  create(crawl: CrawlItem): Promise<boolean> {
    return this.deps.table.create(crawl);
  }

  /** Sets or (null) removes the crawl's refresh schedule, with its place in the schedule's index. */
  async schedule(crawl: CrawlItem, schedule: RefreshSchedule | null): Promise<CrawlItem> {
    const updated = await this.deps.table.update<CrawlItem>(
      crawl.pk,
      crawl.sk,
      {
        refresh: schedule,
        ...(schedule ? refreshMarker(crawl.workspaceId, crawl.crawlId, schedule) : {}),
      },
      undefined,
      schedule ? [] : SCHEDULE_MARKER,
    );
    if (!updated) throw new Error(`Crawl ${crawl.crawlId} is gone`);
    return updated;
  }

  /** Records a scheduled crawl's latest run. */
  async noteRun(crawl: CrawlItem, runId: string): Promise<void> {
    await this.deps.table.update(crawl.pk, crawl.sk, { lastRunId: runId });
  }

  /**
   * Adds to the crawl's counters and marks progress; answers the crawl as it is now. A cancelled
   * crawl's counters stay as they were when it was cancelled.
   */
  async count(crawl: CrawlItem, counters: Partial<CrawlCounts>): Promise<CrawlItem> {
    const updated = await this.deps.table.change<CrawlItem>(crawl.pk, crawl.sk, {
      add: counters,
      set: { updatedAt: new Date().toISOString() },
      condition: notCancelled(),
    });
    const now = updated ?? (await this.get(crawl.workspaceId, crawl.crawlId));
    if (!now) throw new Error(`Crawl ${crawl.crawlId} is gone`);
    return now;
  }

  /**
   * Takes one of the crawl's `maxPages` index slots for a page; idempotent, so a retried page
   * keeps the slot it took. False when the slots are gone or the crawl stopped.
   */
  async takeSlot(crawl: CrawlItem, pageKey: string): Promise<boolean> {
    const taken = await this.deps.table.change(crawl.pk, crawl.sk, {
      add: { slots: new Set([pageKey]) },
      condition: and(crawlRunning(), slotFor(pageKey, crawl.maxPages)),
    });
    return taken !== undefined;
  }

  /**
   * Moves a running crawl to a final status; undefined when it was not running. Whoever ends it
   * returns the page quota no page used: a crawl uses one page per slot taken, and no slot is
   * taken once it has ended, so pages never fetched or skipped go back.
   */
  async end(
    crawl: CrawlItem,
    status: Exclude<CrawlStatus, "indexing">,
    lastError: string | null,
    counts?: CrawlCounts,
  ): Promise<CrawlItem | undefined> {
    const { table, events } = this.deps;
    const ended = await table.change<CrawlItem>(crawl.pk, crawl.sk, {
      set: { ...counts, status, lastError, finishedAt: new Date().toISOString() },
      condition: crawlRunning(),
    });
    if (ended?.quota) {
      const unused = ended.quota.amount - (ended.slots?.size ?? 0);
      await refundUnused(table, ended, unused, async (quota, condition) => {
        return (await table.update(ended.pk, ended.sk, { quota }, condition)) !== undefined;
      });
    }
    if (ended) await events?.emit(ended.workspaceId, "crawl.completed", endedCrawl(ended));
    return ended;
  }

  /** Marks that the watchdog re-sent stuck pages, which also counts as progress. */
  async nudge(crawl: CrawlItem): Promise<void> {
    await this.deps.table.update(crawl.pk, crawl.sk, {
      nudges: (crawl.nudges ?? 0) + 1,
      updatedAt: new Date().toISOString(),
    });
  }
}

/**
 * What `crawl.completed` tells: the crawl's outcome and counters, and for a scheduled re-crawl
 * the crawl it refreshed.
 */
const endedCrawl = (crawl: CrawlItem) => ({
  crawlId: crawl.crawlId,
  refreshOf: crawl.refreshOf ?? null,
  seedUrl: crawl.seedUrl,
  status: crawl.status,
  pagesDiscovered: crawl.pagesDiscovered,
  pagesIndexed: crawl.pagesIndexed,
  pagesFailed: crawl.pagesFailed,
  pagesSkipped: crawl.pagesSkipped,
  startedAt: crawl.startedAt,
  finishedAt: crawl.finishedAt,
  lastError: crawl.lastError,
});

/** Every slot filled, or every page found has finished. */
export function isDone(crawl: CrawlCounts & { maxPages: number }): boolean {
  const finished = crawl.pagesIndexed + crawl.pagesSkipped + crawl.pagesFailed;
  return crawl.pagesIndexed >= crawl.maxPages || finished >= crawl.pagesDiscovered;
}
