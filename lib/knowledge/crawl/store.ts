import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { mapLimit } from "../../async.js";
import { isId, newId } from "../../ids.js";
import { type QuotaCharge, refundUnused } from "../../limits/quotas.js";
import type { CrawlMessage, Queue } from "../../store/queue.js";
import { type Item, type Page, type Table, wsKey } from "../../store/table.js";
import { nextPace, type Observation, startGap } from "../../web/pace.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import type { RefreshSchedule } from "../sources/fields.js";
import { refreshMarker, SCHEDULE_MARKER } from "../sources/schedule.js";

/**
 * The state of crawls in the table, all under the workspace's partition:
 *
 * - `CRAWL#{crawlId}`: the crawl, its settings and counters, and `slots`, the string set of pages
 *   that hold one of the `maxPages` index slots. Adding to a set is idempotent and its size can be
 *   a condition, so "exactly maxPages" survives retries without transactions.
 * - `CRAWLPAGE#{crawlId}#{pageKey}`: one per discovered URL, created with a conditional put: the
 *   frontier's deduplication. `pageKey` hashes the canonical URL.
 * - `CRAWLHASH#{crawlId}#{contentHash}`: first page with some content; later ones are duplicates.
 * - `CRAWLPATH#{crawlId}#{pathKey}`: how many query variants of one path were taken.
 * - `CRAWLHOST#{crawlId}#{host}`: the next time the host may be fetched and the gap its
 *   response times call for (the adaptive pace of `lib/web/pace.ts`).
 *
 * Counters are bumped after the single-item writes they count; a crash between the two can leave
 * them short, which the watchdog repairs by recounting the pages.
 */

export type CrawlStatus = "indexing" | "completed" | "failed" | "cancelled";
export type PageStatus = "queued" | "indexed" | "skipped" | "failed";

/** Why a page was skipped. Failures carry the fetch or extraction error code instead. */
export type SkipReason =
  | "robots"
  | "filter"
  | "trap"
  | "duplicate"
  | "redirect"
  | "non_html"
  | "http_error"
  | "empty"
  | "over_cap"
  | "cancelled";

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

export interface CrawlPageItem extends Item {
  crawlId: string;
  pageKey: string;
  /** Canonical URL: what is fetched and what identifies the page. */
  url: string;
  depth: number;
  status: PageStatus;
  reason: string | null;
  message: string | null;
  httpStatus: number | null;
  /**
   * Assigned when found, for the page's new source; once indexed, the source that stands for
   * the page's URL (an existing one, when an earlier crawl or an add found it first).
   */
  sourceId: string;
  /** Transient failures (429, 5xx, timeouts) met so far; the page is retried a few times. */
  attempts?: number;
  discoveredAt: string;
  updatedAt: string;
}

/** A URL found by a crawl, with the verdict of the scope rules (undefined: to be crawled). */
export interface Discovery {
  url: string;
  depth: number;
  skip?: { reason: SkipReason; message: string } | undefined;
}

export interface PageOutcome {
  status: Exclude<PageStatus, "queued">;
  reason: string | null;
  message: string | null;
  httpStatus?: number | null;
  /** The source of an indexed page. */
  sourceId?: string;
}

interface HostPaceItem extends Item {
  /** Epoch ms of the host's next free slot. */
  nextAt: number;
  gapMs?: number;
}

/** A host's turn: the slot this page may fetch in, or when to ask again (its turn is further off). */
export type HostTurn = { slot: number } | { retryAt: number };

export const CRAWL_PREFIX = "CRAWL#";
export const crawlKey = (crawlId: string) => `${CRAWL_PREFIX}${crawlId}`;
const pagePrefix = (crawlId: string) => `CRAWLPAGE#${crawlId}#`;
// Stryker disable next-line MethodExpression: the whole hash tells the same keys apart
const hashKey = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 32);
const pageKeyOf = (url: string) => hashKey(url);

/**
 * The sources the given crawls indexed or refreshed (one crawl can own a page an earlier crawl or
 * an add created): read from their pages' report, at most a crawl's discovered pages each.
 */
export async function crawlSourceIds(
  table: Table,
  workspaceId: string,
  crawlIds: readonly string[],
): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const crawlId of new Set(crawlIds)) {
    if (!isId("crawl", crawlId)) continue;
    const pages = await table.all<CrawlPageItem>(wsKey(workspaceId), pagePrefix(crawlId), [
      "pk",
      "sk",
      "status",
      "sourceId",
    ]);
    for (const page of pages) if (page.status === "indexed") ids.add(page.sourceId);
  }
  return ids;
}

/** `status` is a reserved word in expressions. */
const STATUS_NAME = { "#status": "status" };
const statusIs = (status: CrawlStatus | PageStatus) => ({
  expression: "#status = :status",
  names: STATUS_NAME,
  values: { ":status": status },
});

/** Query variants of one path taken at most: calendars and faceted search stop here. */
const MAX_QUERY_VARIANTS = 20;

/** Pages a process remembers as recorded (a crawl's key and the page's, about 100 bytes each). */
const REMEMBERED_PAGES = 50_000;

/** URLs recorded at most per crawl, so a huge site cannot grow the frontier without end. */
export const maxDiscovered = (maxPages: number) => Math.min(10 * maxPages + 100, 10_000);

const COUNTER: Record<PageOutcome["status"], keyof CrawlCounts> = {
  indexed: "pagesIndexed",
  skipped: "pagesSkipped",
  failed: "pagesFailed",
};

export interface CrawlStoreDeps {
  table: Table;
  /** The crawl queue: one message per page, plus the watchdog's. */
  queue: Queue<CrawlMessage>;
  /** Seconds between two watchdog checks of a running crawl. */
  watchSeconds: number;
  /** Told `crawl.completed` when a crawl ends, however it ends. */
  events?: WebhookEvents | undefined;
}

export class CrawlStore {
  /**
   * Pages this process knows are recorded. A site links most pages from every page (navigation,
   * related articles): without it, each page found again cost a conditional write that failed.
   */
  private readonly recorded = new LRUCache<string, true>({ max: REMEMBERED_PAGES });

  constructor(private readonly deps: CrawlStoreDeps) {}

  getCrawl(workspaceId: string, crawlId: string): Promise<CrawlItem | undefined> {
    return this.deps.table.get<CrawlItem>(wsKey(workspaceId), crawlKey(crawlId));
  }

  createCrawl(crawl: CrawlItem): Promise<boolean> {
    return this.deps.table.create(crawl);
  }

  async setRefresh(crawl: CrawlItem, schedule: RefreshSchedule | null): Promise<CrawlItem> {
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

  async setLastRun(crawl: CrawlItem, runId: string): Promise<void> {
    await this.deps.table.update(crawl.pk, crawl.sk, { lastRunId: runId });
  }

  /** A workspace's crawls, newest first. */
  listCrawls(workspaceId: string, limit: number, cursor?: string): Promise<Page<CrawlItem>> {
    return this.deps.table.page<CrawlItem>({
      pk: wsKey(workspaceId),
      skPrefix: CRAWL_PREFIX,
      limit,
      cursor,
      newestFirst: true,
    });
  }

  getPage(workspaceId: string, crawlId: string, pageKey: string) {
    return this.deps.table.get<CrawlPageItem>(
      wsKey(workspaceId),
      `${pagePrefix(crawlId)}${pageKey}`,
    );
  }

  listPages(
    crawl: CrawlItem,
    status: readonly PageStatus[] | undefined,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<CrawlPageItem>> {
    return this.deps.table.page<CrawlPageItem>({
      pk: crawl.pk,
      skPrefix: pagePrefix(crawl.crawlId),
      limit,
      cursor,
      anyOf: { status },
    });
  }

  /**
   * Records newly found URLs and queues those to crawl. Conditional puts make each URL count once
   * per crawl however often it is found, and URLs this process saw recorded cost no request at
   * all; counters are bumped before the messages go out, so the crawl cannot look finished while
   * its new pages wait.
   *
   * Only a running crawl grows: the crawl is read afresh, because a page fetched before a cancel
   * (or before the last slot filled) finds its links after it. A stop landing between this read
   * and the writes lets those few pages through; their messages then skip them as `cancelled`.
   */
  async discover(crawl: CrawlItem, found: Discovery[]): Promise<void> {
    const unknown = [...new Map(found.map((d) => [d.url, d])).values()].filter(
      (d) => !this.recorded.has(`${crawl.crawlId}#${pageKeyOf(d.url)}`),
    );
    if (unknown.length === 0) return;
    const current = await this.getCrawl(crawl.workspaceId, crawl.crawlId);
    if (current?.status !== "indexing") return;
    const room = maxDiscovered(current.maxPages) - current.pagesDiscovered;
    const unique = unknown.slice(0, Math.max(0, room));
    const now = new Date().toISOString();
    const created = (
      await mapLimit(unique, 8, async (d) => {
        const page: CrawlPageItem = {
          pk: crawl.pk,
          sk: `${pagePrefix(crawl.crawlId)}${pageKeyOf(d.url)}`,
          crawlId: crawl.crawlId,
          pageKey: pageKeyOf(d.url),
          url: d.url,
          depth: d.depth,
          status: d.skip ? "skipped" : "queued",
          reason: d.skip?.reason ?? null,
          message: d.skip?.message ?? null,
          httpStatus: null,
          sourceId: newId("source"),
          discoveredAt: now,
          updatedAt: now,
        };
        const isNew = await this.deps.table.create(page);
        this.recorded.set(`${crawl.crawlId}#${page.pageKey}`, true);
        if (!isNew) return undefined;
        if (page.status === "queued" && !(await this.takeQueryVariant(crawl, page.url))) {
          const message = `More than ${MAX_QUERY_VARIANTS} query variants of this path`;
          await this.settle(page, { status: "skipped", reason: "trap", message });
          // Stryker disable next-line ObjectLiteral: only whether it is queued is read, and it is not
          return { ...page, status: "skipped" as const };
        }
        return page;
      })
    ).filter((p): p is CrawlPageItem => p !== undefined);
    if (created.length === 0) return;

    const queued = created.filter((p) => p.status === "queued");
    await this.add(crawl, {
      pagesDiscovered: created.length,
      pagesSkipped: created.length - queued.length,
    });
    await this.sendPages(
      crawl,
      queued.map((page) => page.pageKey),
    );
  }

  /** Queues a page, at once or once `at` (epoch ms) has come. */
  sendPage(crawl: CrawlItem, pageKey: string, at?: number): Promise<void> {
    const wait = at === undefined ? 0 : (at - Date.now()) / 1000;
    return this.deps.queue.send(pageMessage(crawl, pageKey), wait);
  }

  /** Queues pages at once, ten to a request. */
  sendPages(crawl: CrawlItem, pageKeys: string[]): Promise<void> {
    return this.deps.queue.sendAll(pageKeys.map((pageKey) => pageMessage(crawl, pageKey)));
  }

  /**
   * Sends a page that met a transient failure back to the queue for another try at `at`, once
   * per attempt (a message delivered twice counts its failure once). False when it was finished
   * or retried meanwhile.
   */
  async retryPage(crawl: CrawlItem, page: CrawlPageItem, at: number): Promise<boolean> {
    const counted = await this.deps.table.change(page.pk, page.sk, {
      add: { attempts: 1 },
      set: { updatedAt: new Date().toISOString() },
      condition: {
        expression: "#status = :status AND (attribute_not_exists(attempts) OR attempts = :seen)",
        names: STATUS_NAME,
        values: { ":status": "queued", ":seen": page.attempts ?? 0 },
      },
    });
    if (!counted) return false;
    await this.sendPage(crawl, page.pageKey, at);
    return true;
  }

  sendWatch(crawl: CrawlItem): Promise<void> {
    const message: CrawlMessage = {
      kind: "crawl-watch",
      workspaceId: crawl.workspaceId,
      crawlId: crawl.crawlId,
    };
    return this.deps.queue.send(message, this.deps.watchSeconds);
  }

  /**
   * Finishes a queued page and counts it, unless it was finished already (a message delivered
   * twice). Completes the crawl when this page was the last one pending or filled the last slot.
   */
  async finishPage(crawl: CrawlItem, page: CrawlPageItem, outcome: PageOutcome): Promise<void> {
    if (!(await this.settle(page, outcome))) return;
    const counted = await this.add(crawl, { [COUNTER[outcome.status]]: 1 });
    // Stryker disable next-line ConditionalExpression: end() moves only a running crawl anyway
    if (counted.status === "indexing" && isDone(counted)) {
      await this.end(counted, "completed", null);
    }
  }

  /**
   * Takes one of the crawl's `maxPages` index slots for a page; idempotent, so a retried page
   * keeps the slot it took. False when the slots are gone or the crawl stopped.
   */
  async takeSlot(crawl: CrawlItem, pageKey: string): Promise<boolean> {
    const taken = await this.deps.table.change(crawl.pk, crawl.sk, {
      add: { slots: new Set([pageKey]) },
      condition: {
        expression:
          "#status = :indexing AND (attribute_not_exists(slots) OR size(slots) < :max OR contains(slots, :page))",
        names: STATUS_NAME,
        values: { ":page": pageKey, ":max": crawl.maxPages, ":indexing": "indexing" },
      },
    });
    return taken !== undefined;
  }

  /** Claims a content hash for a page: undefined when it is the first, else the URL that has it. */
  async claimContent(page: CrawlPageItem, contentHash: string): Promise<string | undefined> {
    const item = {
      pk: page.pk,
      sk: `CRAWLHASH#${page.crawlId}#${contentHash}`,
      pageKey: page.pageKey,
      url: page.url,
    };
    if (await this.deps.table.create(item)) return undefined;
    const owner = await this.deps.table.get<typeof item>(item.pk, item.sk);
    return owner && owner.pageKey !== page.pageKey ? owner.url : undefined;
  }

  /**
   * Claims the host's next slot for this caller when it is at most `maxAheadMs` away, moving the
   * host's next slot one gap later: the larger of `floorMs` and the gap its response times call
   * for. A slot further off is not claimed (the caller asks again then), so the slots handed out
   * follow the pace as it adapts. A host with a slot ahead hands out the next one by an atomic
   * addition, which callers racing for it all get in turn without retrying; an idle host's slot
   * (now) goes to the one conditional write that finds it idle.
   */
  async claimHostSlot(
    crawl: CrawlItem,
    host: string,
    floorMs: number,
    now: number,
    maxAheadMs: number,
  ): Promise<HostTurn> {
    const key = this.hostKey(crawl, host);
    const limit = now + maxAheadMs;
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.deps.table.get<HostPaceItem>(key.pk, key.sk);
      if (current && current.nextAt > limit) return { retryAt: current.nextAt };
      const gapMs = Math.max(floorMs, current?.gapMs ?? startGap(floorMs));
      if (!current) {
        if (await this.deps.table.create({ ...key, nextAt: now + gapMs, gapMs })) {
          return { slot: now };
        }
      } else if (current.nextAt <= now) {
        const idle = { expression: "nextAt <= :now", values: { ":now": now } };
        if (
          await this.deps.table.change(key.pk, key.sk, {
            set: { nextAt: now + gapMs },
            condition: idle,
          })
        ) {
          return { slot: now };
        }
      } else {
        const ahead = {
          expression: "nextAt BETWEEN :now AND :limit",
          values: { ":now": now, ":limit": limit },
        };
        const moved = await this.deps.table.change<HostPaceItem>(key.pk, key.sk, {
          add: { nextAt: gapMs },
          condition: ahead,
        });
        if (moved) return { slot: moved.nextAt - gapMs };
      }
    }
    throw new Error(`Too much contention for the politeness slot of ${host}`);
  }

  /**
   * Adapts the host's pace to what a request showed (`nextPace`): its gap, and a pause it asked
   * for, which moves its next slot out. Writes race harmlessly: the last observation wins.
   */
  async observeHost(
    crawl: CrawlItem,
    host: string,
    observation: Observation,
    floorMs: number,
  ): Promise<void> {
    const key = this.hostKey(crawl, host);
    const current = await this.deps.table.get<HostPaceItem>(key.pk, key.sk);
    const pace = nextPace(current?.gapMs ?? startGap(floorMs), observation, floorMs);
    await this.deps.table.change(key.pk, key.sk, { set: { gapMs: pace.gapMs }, upsert: true });
    if (pace.pauseUntil !== undefined) {
      await this.deps.table.change(key.pk, key.sk, {
        set: { nextAt: pace.pauseUntil },
        condition: { expression: "nextAt < :until", values: { ":until": pace.pauseUntil } },
        upsert: true,
      });
    }
  }

  private hostKey(crawl: CrawlItem, host: string) {
    return { pk: crawl.pk, sk: `CRAWLHOST#${crawl.crawlId}#${host}` };
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
    const ended = await this.deps.table.change<CrawlItem>(crawl.pk, crawl.sk, {
      set: { ...counts, status, lastError, finishedAt: new Date().toISOString() },
      condition: statusIs("indexing"),
    });
    if (ended?.quota) {
      await refundUnused(this.deps.table, ended, ended.quota.amount - (ended.slots?.size ?? 0));
    }
    if (ended)
      await this.deps.events?.emit(ended.workspaceId, "crawl.completed", endedCrawl(ended));
    return ended;
  }

  /** Recounts a crawl from its pages: the truth the counters may have drifted from. */
  async recount(crawl: CrawlItem): Promise<{ counts: CrawlCounts; queued: CrawlPageItem[] }> {
    const pages = await this.deps.table.all<CrawlPageItem>(crawl.pk, pagePrefix(crawl.crawlId), [
      "pk",
      "sk",
      "pageKey",
      "status",
    ]);
    const count = (status: PageStatus) => pages.filter((p) => p.status === status).length;
    return {
      counts: {
        pagesDiscovered: pages.length,
        pagesIndexed: count("indexed"),
        pagesSkipped: count("skipped"),
        pagesFailed: count("failed"),
      },
      queued: pages.filter((p) => p.status === "queued"),
    };
  }

  /** Marks that the watchdog re-sent stuck pages, which also counts as progress. */
  async nudged(crawl: CrawlItem): Promise<void> {
    await this.deps.table.update(crawl.pk, crawl.sk, {
      nudges: (crawl.nudges ?? 0) + 1,
      updatedAt: new Date().toISOString(),
    });
  }

  private async settle(page: CrawlPageItem, outcome: PageOutcome): Promise<boolean> {
    const done = await this.deps.table.change(page.pk, page.sk, {
      set: {
        ...outcome,
        httpStatus: outcome.httpStatus ?? null,
        updatedAt: new Date().toISOString(),
      },
      condition: statusIs("queued"),
    });
    return done !== undefined;
  }

  /** Counts one more query variant of the URL's path; false past the limit. */
  private async takeQueryVariant(crawl: CrawlItem, href: string): Promise<boolean> {
    const url = new URL(href);
    if (!url.search) return true;
    const key = {
      pk: crawl.pk,
      sk: `CRAWLPATH#${crawl.crawlId}#${hashKey(`${url.origin}${url.pathname}`)}`,
    };
    const taken = await this.deps.table.change(key.pk, key.sk, {
      add: { variants: 1 },
      condition: { expression: "variants < :max", values: { ":max": MAX_QUERY_VARIANTS } },
      upsert: true,
    });
    return taken !== undefined;
  }

  /**
   * Adds to the crawl's counters and marks progress; answers the crawl as it is now. A cancelled
   * crawl's counters stay as they were when it was cancelled.
   */
  private async add(crawl: CrawlItem, counters: Partial<CrawlCounts>): Promise<CrawlItem> {
    const updated = await this.deps.table.change<CrawlItem>(crawl.pk, crawl.sk, {
      add: counters,
      set: { updatedAt: new Date().toISOString() },
      condition: {
        expression: "#status <> :cancelled",
        names: STATUS_NAME,
        values: { ":cancelled": "cancelled" },
      },
    });
    const now = updated ?? (await this.getCrawl(crawl.workspaceId, crawl.crawlId));
    if (!now) throw new Error(`Crawl ${crawl.crawlId} is gone`);
    return now;
  }
}

const pageMessage = (crawl: CrawlItem, pageKey: string): CrawlMessage => ({
  kind: "crawl-page",
  workspaceId: crawl.workspaceId,
  crawlId: crawl.crawlId,
  pageKey,
});

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
function isDone(crawl: CrawlCounts & { maxPages: number }): boolean {
  const finished = crawl.pagesIndexed + crawl.pagesSkipped + crawl.pagesFailed;
  return crawl.pagesIndexed >= crawl.maxPages || finished >= crawl.pagesDiscovered;
}
