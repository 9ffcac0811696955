import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { mapLimit } from "../../async.js";
import { isId, newId } from "../../ids.js";
import { and, type Condition, equals, lessThan, missing, or } from "../../store/conditions.js";
import type { CrawlMessage, Queue } from "../../store/queue.js";
import { type Item, type Page, type Table, wsKey } from "../../store/table.js";
import {
  type CrawlCounts,
  type CrawlItem,
  type CrawlRecords,
  expiredNow,
  helperExpiry,
  isDone,
} from "./records.js";

/**
 * A crawl's frontier: the pages it found and the messages that crawl them, under the workspace's
 * partition. `CrawlFrontier` is the only code that writes them.
 *
 * - `CRAWLPAGE#{crawlId}#{pageKey}`: one per discovered URL, created with a conditional put: the
 *   frontier's deduplication. `pageKey` hashes the canonical URL.
 * - `CRAWLPATH#{crawlId}#{pathKey}`: how many query variants of one path were taken; a helper of
 *   the running crawl, stamped to expire `CRAWL_HELPER_DAYS` after its last write, or at once
 *   when the crawl ends. Pages never expire: they are the crawl's report.
 */

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
  /** A new page, refused at the workspace's sources cap (`MAX_SOURCES_PER_WORKSPACE`). */
  | "source_limit"
  | "cancelled";

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
  /**
   * When a worker last took the page's message; absent while its message waits in the queue
   * (never taken, or sent back since). The crawl watchdog tells waiting from stalled by it.
   */
  takenAt?: string;
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

const pagePrefix = (crawlId: string) => `CRAWLPAGE#${crawlId}#`;
const variantPrefix = (crawlId: string) => `CRAWLPATH#${crawlId}#`;
// Stryker disable next-line MethodExpression: the whole hash tells the same keys apart
const hashKey = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 32);
const pageKeyOf = (url: string) => hashKey(url);

/** The page is still queued: only a queued page is finished, or retried. */
const pageQueued = (): Condition => equals("status", "queued");

/** The page has met `attempts` transient failures so far, no more (a retry counts once). */
const attemptsSeen = (attempts: number): Condition =>
  or(missing("attempts"), equals("attempts", attempts));

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

export interface FrontierDeps {
  table: Table;
  /** The crawl queue: one message per page, plus the watchdog's. */
  queue: Queue<CrawlMessage>;
  /** Seconds between two watchdog checks of a running crawl. */
  watchSeconds: number;
  /** The crawls whose pages these are: read, counted and ended as pages are found and finish. */
  records: CrawlRecords;
}

export class CrawlFrontier {
  /**
   * Pages this process knows are recorded. A site links most pages from every page (navigation,
   * related articles): without it, each page found again cost a conditional write that failed.
   */
  private readonly recorded = new LRUCache<string, true>({ max: REMEMBERED_PAGES });

  constructor(private readonly deps: FrontierDeps) {}

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
    const current = await this.deps.records.get(crawl.workspaceId, crawl.crawlId);
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
    await this.deps.records.count(crawl, {
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
   * Notes that a worker took the queued page's message (see `takenAt`). False when the page was
   * finished meanwhile.
   */
  async takePage(page: CrawlPageItem): Promise<boolean> {
    const taken = await this.deps.table.change(page.pk, page.sk, {
      set: { takenAt: new Date().toISOString() },
      condition: pageQueued(),
    });
    return taken !== undefined;
  }

  /** Sends a taken page back to the queue, to come at `at` (epoch ms): it waits again. */
  async deferPage(crawl: CrawlItem, page: CrawlPageItem, at: number): Promise<void> {
    await this.deps.table.change(page.pk, page.sk, {
      set: { updatedAt: new Date().toISOString() },
      remove: ["takenAt"],
      condition: pageQueued(),
    });
    await this.sendPage(crawl, page.pageKey, at);
  }

  /** Sends queued pages' messages again (the watchdog's nudge): they wait in the queue again. */
  async requeuePages(crawl: CrawlItem, pages: CrawlPageItem[]): Promise<void> {
    const now = new Date().toISOString();
    await mapLimit(pages, 8, (page) =>
      this.deps.table.change(page.pk, page.sk, {
        set: { updatedAt: now },
        remove: ["takenAt"],
        condition: pageQueued(),
      }),
    );
    await this.sendPages(
      crawl,
      pages.map((page) => page.pageKey),
    );
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
      remove: ["takenAt"],
      condition: and(pageQueued(), attemptsSeen(page.attempts ?? 0)),
    });
    if (!counted) return false;
    await this.sendPage(crawl, page.pageKey, at);
    return true;
  }

  /** Queues the crawl's next watchdog check. */
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
    const counted = await this.deps.records.count(crawl, { [COUNTER[outcome.status]]: 1 });
    // Stryker disable next-line ConditionalExpression: end() moves only a running crawl anyway
    if (counted.status === "indexing" && isDone(counted)) {
      await this.deps.records.end(counted, "completed", null);
    }
  }

  /** Recounts a crawl from its pages: the truth the counters may have drifted from. */
  async recount(crawl: CrawlItem): Promise<{ counts: CrawlCounts; queued: CrawlPageItem[] }> {
    const pages = await this.deps.table.all<CrawlPageItem>(crawl.pk, pagePrefix(crawl.crawlId), [
      "pk",
      "sk",
      "pageKey",
      "status",
      "takenAt",
      "updatedAt",
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

  /** Lets the query-variant counts of an ended crawl expire now (its pages stay). */
  async expireVariants(crawl: CrawlItem, nowMs = Date.now()): Promise<void> {
    const { table } = this.deps;
    const counts = await table.all<Item>(crawl.pk, variantPrefix(crawl.crawlId), ["pk", "sk"]);
    await mapLimit(counts, 8, (c) => table.change(c.pk, c.sk, { set: expiredNow(nowMs) }));
  }

  private async settle(page: CrawlPageItem, outcome: PageOutcome): Promise<boolean> {
    const done = await this.deps.table.change(page.pk, page.sk, {
      set: {
        ...outcome,
        httpStatus: outcome.httpStatus ?? null,
        updatedAt: new Date().toISOString(),
      },
      condition: pageQueued(),
    });
    return done !== undefined;
  }

  /** Counts one more query variant of the URL's path; false past the limit. */
  private async takeQueryVariant(crawl: CrawlItem, href: string): Promise<boolean> {
    const url = new URL(href);
    if (!url.search) return true;
    const key = {
      pk: crawl.pk,
      sk: `${variantPrefix(crawl.crawlId)}${hashKey(`${url.origin}${url.pathname}`)}`,
    };
    const taken = await this.deps.table.change(key.pk, key.sk, {
      add: { variants: 1 },
      set: helperExpiry(),
      condition: lessThan("variants", MAX_QUERY_VARIANTS),
      upsert: true,
    });
    return taken !== undefined;
  }
}

const pageMessage = (crawl: CrawlItem, pageKey: string): CrawlMessage => ({
  kind: "crawl-page",
  workspaceId: crawl.workspaceId,
  crawlId: crawl.crawlId,
  pageKey,
});
