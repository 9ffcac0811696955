import { type QuotaCharge, refundUnused } from "../../limits/quotas.js";
import { and, type Condition, equals, lessThan, missing, not, or } from "../../store/conditions.js";
import { TTL_ATTRIBUTE } from "../../store/schema.js";
import { type Item, type Page, type Table, wsKey } from "../../store/table.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import type { RefreshSchedule } from "../sources/fields.js";
import { refreshMarker, SCHEDULE_MARKER } from "../sources/schedule.js";

/**
 * The crawl record, `CRAWL#{crawlId}` under the workspace's partition: a crawl's settings, its
 * counters, and `slotsTaken`, how many of its `maxPages` index slots pages took; each page that
 * took one has its slot item `CRAWLSLOT#{crawlId}#{pageKey}`. A conditional create of the slot
 * item lets one delivery of a page count it, and the counter's conditional increment hands out
 * the slots, so racing pages get exactly `maxPages` however often each is delivered (see
 * `takeSlot`). The
 * crawl item stays a few hundred bytes however many pages it indexes: every page's count and
 * read costs one unit, not one per 1 KB (4 KB) of a set of up to `maxPages` keys. Crawls started
 * before the counter keep their `slots` set, which no longer grows and still counts.
 * `CrawlRecords` is the only code that writes either.
 *
 * Counters are bumped after the single-item writes they count (see `frontier.ts`); a crash
 * between the two can leave them short, which the watchdog repairs by recounting the pages.
 */

import type { RenderMode } from "../../web/render/renderer.js";
import type { ChunkingSettings, Metadata } from "../sources/attributes.js";

export type CrawlStatus = "indexing" | "completed" | "failed" | "cancelled";

export interface CrawlSettings {
  seedUrl: string;
  maxPages: number;
  maxDepth: number;
  includeSubdomains: boolean;
  includePaths: string[];
  excludePaths: string[];
  /** Given to each page's new source (absent on crawls started before attributes existed). */
  metadata?: Metadata | undefined;
  chunking?: ChunkingSettings | undefined;
  /** When its pages are rendered in a browser; absent (older crawls): `auto`. */
  render?: RenderMode | undefined;
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
  /** Index slots taken by pages (see `takeSlot`); absent until the first. */
  slotsTaken?: number;
  /** Crawls started before `slotsTaken`: the pages that took a slot then. It no longer grows. */
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
 * paces `CRAWLHOST#`, index slots `CRAWLSLOT#`) outlive their last write. They matter only while the crawl runs, and the
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

/** Fewer than `room` slots were taken through the counter. */
const slotFree = (room: number): Condition =>
  or(missing("slotsTaken"), lessThan("slotsTaken", room));

const slotKey = (crawlId: string, pageKey: string) => `CRAWLSLOT#${crawlId}#${pageKey}`;

/** A page's index slot: `claiming` while its delivery takes the counter, then `held`. */
interface SlotItem extends Item {
  pageKey: string;
  state: "claiming" | "held";
  claimedAt: number;
}

/** How long a claim may stay `claiming` before another delivery of its page takes it over. */
const CLAIM_LEASE_MS = 60_000;
/** A second delivery meeting a claim re-reads it this often, this many times, then throws. */
const CLAIM_POLL_MS = 20;
const CLAIM_POLLS = 250;

/** Slots a crawl has given out: its counter, and the set of a crawl started before it. */
export const slotsTaken = (crawl: Pick<CrawlItem, "slotsTaken" | "slots">) =>
  (crawl.slotsTaken ?? 0) + (crawl.slots?.size ?? 0);

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
   *
   * The page's slot item is created first, conditionally, as `claiming`: one delivery of a page
   * claims it, and only that one counts. It then takes the counter, conditionally (below
   * `maxPages`), and marks its item `held`; refused, it deletes its claim. So the counter counts
   * distinct pages only, and racing pages get exactly `maxPages`. A second delivery of the page
   * meeting a claim waits for its outcome. A claim left `claiming` for `CLAIM_LEASE_MS` (its
   * process died between the writes) is taken over and counted again: that crash can cost the
   * crawl one slot, never give it one more.
   */
  async takeSlot(crawl: CrawlItem, pageKey: string): Promise<boolean> {
    const { table } = this.deps;
    if (crawl.slots?.has(pageKey)) return this.running(crawl);
    const key = { pk: crawl.pk, sk: slotKey(crawl.crawlId, pageKey) };
    for (let polls = 0; ; polls++) {
      const now = Date.now();
      const claim = { ...key, crawlId: crawl.crawlId, pageKey, state: "claiming", claimedAt: now };
      if (await table.create({ ...claim, ...helperExpiry(now) })) return this.countSlot(crawl, key);
      const slot = await table.get<SlotItem>(key.pk, key.sk);
      if (!slot) continue;
      if (slot.state === "held") return this.running(crawl);
      if (now - slot.claimedAt > CLAIM_LEASE_MS) {
        const abandoned = and(equals("state", "claiming"), equals("claimedAt", slot.claimedAt));
        const taken = await table.change(key.pk, key.sk, {
          set: { claimedAt: now },
          condition: abandoned,
        });
        if (taken) return this.countSlot(crawl, key);
        continue;
      }
      if (polls >= CLAIM_POLLS) throw new Error(`Page ${pageKey} is still claiming its slot`);
      await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
    }
  }

  /** Whether the page holds one of the crawl's index slots. */
  async holdsSlot(crawl: CrawlItem, pageKey: string): Promise<boolean> {
    if (crawl.slots?.has(pageKey)) return true;
    const slot = await this.deps.table.get<SlotItem>(crawl.pk, slotKey(crawl.crawlId, pageKey));
    return slot?.state === "held";
  }

  /** Counts the slot the page claimed (`key`), or gives the claim back when none is free. */
  private async countSlot(crawl: CrawlItem, key: { pk: string; sk: string }): Promise<boolean> {
    const { table } = this.deps;
    const room = crawl.maxPages - (crawl.slots?.size ?? 0);
    const counted =
      room > 0 &&
      (await table.change(crawl.pk, crawl.sk, {
        add: { slotsTaken: 1 },
        condition: and(crawlRunning(), slotFree(room)),
      }));
    if (!counted) {
      await table.delete(key.pk, key.sk, equals("state", "claiming"));
      return false;
    }
    await table.update(key.pk, key.sk, { state: "held" });
    return true;
  }

  private async running(crawl: CrawlItem): Promise<boolean> {
    return (await this.get(crawl.workspaceId, crawl.crawlId))?.status === "indexing";
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
      const unused = ended.quota.amount - slotsTaken(ended);
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
