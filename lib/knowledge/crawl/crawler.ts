import { createHash } from "node:crypto";
import { QUEUE_RETENTION_DAYS } from "../../config.js";
import { toDisplayText } from "../../display-text.js";
import { isDomainError } from "../../errors.js";
import { logger } from "../../log.js";
import { count } from "../../metrics.js";
import { redactError } from "../../redact.js";
import type { Blobs } from "../../store/blobs.js";
import type { CrawlMessage, Delivery, PageMessage, Queue } from "../../store/queue.js";
import type { Table } from "../../store/table.js";
import { decodeText, PAGE_KINDS } from "../../web/content-type.js";
import { FetchError, isTransient } from "../../web/errors.js";
import { extractPage, warmPageReader } from "../../web/extract.js";
import type { FetchResult, SafeFetcher } from "../../web/fetch.js";
import type { Observation } from "../../web/pace.js";
import { type ExtractedPage, ExtractionError } from "../../web/page.js";
import type { Renderer } from "../../web/render/renderer.js";
import { viewPage } from "../../web/render/view.js";
import type { RobotsRules } from "../../web/robots.js";
import type { PoliteSession } from "../../web/session.js";
import { readSitemaps } from "../../web/sitemap.js";
import { canonicalUrl } from "../../web/url.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import type { SourceItem, Sources } from "../sources/sources.js";
import { ContentClaims } from "./content-claims.js";
import {
  CrawlFrontier,
  type CrawlPageItem,
  type Discovery,
  maxDiscovered,
  type PageOutcome,
  type SkipReason,
} from "./frontier.js";
import { HostPace } from "./host-pace.js";
import { type CrawlItem, CrawlRecords } from "./records.js";
import { CrawlScope } from "./scope.js";

/**
 * The crawl worker's logic: one page per message. A page is fetched (politely, robots.txt
 * allowing), its links and, for the seed, the sitemaps feed the frontier, and a page worth
 * indexing takes a slot and becomes a `url` source whose content is the Markdown just extracted.
 * Watch messages check that a running crawl still makes progress. Every step is safe to repeat.
 */

export interface CrawlerDeps {
  table: Table;
  blobs: Blobs;
  /** The crawl queue. */
  queue: Queue<CrawlMessage>;
  sources: Sources;
  /** Pages and sitemaps: paced by the crawl's host slots, which its invocations share. */
  fetcher: SafeFetcher;
  /** robots.txt, and the gap between two requests to a host (politeness or Crawl-delay). */
  session: PoliteSession;
  /** Renders pages that need scripts (the crawl's `render`); absent, they fail `needs_browser`. */
  renderer?: Renderer | undefined;
  /**
   * A running crawl without progress for this long is stalled, unless pages of it still wait in
   * the queue (none taken yet: a backlog ahead of them is no stall).
   */
  stallMs: number;
  /**
   * How long the crawl queue keeps a message (default `QUEUE_RETENTION_DAYS`): a page waiting
   * longer has no message left, and counts as stalled.
   */
  retentionMs?: number;
  /** Seconds between watchdog checks. */
  watchSeconds: number;
  /** Told `crawl.completed` when a crawl ends. */
  events?: WebhookEvents | undefined;
  /** The watchdog's clock; tests move it forward instead of waiting. */
  now?: () => number;
  /** The first retry's wait after a transient failure (2 s; each next one doubles it). */
  retryBaseMs?: number;
}

export type CrawlOutcome = PageOutcome["status"] | "deferred" | "repeated" | "gone" | WatchOutcome;
type WatchOutcome = "watching" | "waiting" | "nudged" | "completed" | "stalled";

/** Longest robots.txt `Crawl-delay` honoured; a larger one would stall the crawl. */
const MAX_CRAWL_DELAY_MS = 30_000;
/** Politeness waits up to this long in the worker; longer ones go back to the queue. */
const MAX_INLINE_WAIT_MS = 2_000;
/** Transient failures (429, 5xx, timeouts) a page is retried after before it counts as failed. */
export const MAX_PAGE_RETRIES = 3;
/** The first retry's wait; each next one doubles it, and a longer `Retry-After` wins. */
const RETRY_BASE_MS = 2_000;
/** Redirects to the same canonical page (`/docs` to `/docs/`) followed within one message. */
const MAX_SAME_PAGE_REDIRECTS = 5;

const skipped = (reason: SkipReason, message: string): PageOutcome => ({
  status: "skipped",
  reason,
  message,
});

function fetchOutcome(err: FetchError): PageOutcome {
  if (err.code === "http_error") {
    return { ...skipped("http_error", err.message), httpStatus: err.status ?? null };
  }
  if (err.code === "unsupported_content_type") return skipped("non_html", err.message);
  return { status: "failed", reason: err.code, message: err.message };
}

const SCOPE_MESSAGES = {
  filter: "Outside the crawl's paths (seed folder, includePaths, excludePaths)",
  trap: "Looks like a crawler trap (repeated path segments, too many parameters, too long)",
} as const;

export class Crawler {
  private readonly crawls: CrawlRecords;
  private readonly frontier: CrawlFrontier;
  private readonly contents: ContentClaims;
  private readonly pace: HostPace;
  private readonly now: () => number;

  constructor(private readonly deps: CrawlerDeps) {
    this.crawls = new CrawlRecords(deps);
    this.frontier = new CrawlFrontier({ ...deps, records: this.crawls });
    this.contents = new ContentClaims(deps);
    this.pace = new HostPace(deps);
    this.now = deps.now ?? Date.now;
  }

  handle(message: CrawlMessage, delivery: Delivery): Promise<CrawlOutcome> {
    return message.kind === "crawl-watch" ? this.watch(message) : this.page(message, delivery);
  }

  /** The pace's floor on a host: the configured politeness, or a longer Crawl-delay. */
  private floorMs(robots: RobotsRules): number {
    return Math.min(MAX_CRAWL_DELAY_MS, this.deps.session.gapMs(robots));
  }

  private async page(message: PageMessage, delivery: Delivery): Promise<CrawlOutcome> {
    const { workspaceId, crawlId, pageKey } = message;
    const crawl = await this.crawls.get(workspaceId, crawlId);
    const page = crawl && (await this.frontier.getPage(workspaceId, crawlId, pageKey));
    if (!crawl || !page) return "gone";
    if (page.status !== "queued" || !(await this.frontier.takePage(page))) return "repeated";
    try {
      const outcome = await this.crawlPage(crawl, page);
      if (outcome === "deferred") return outcome;
      await this.frontier.finishPage(crawl, page, outcome);
      count(outcome.status === "indexed" ? "CrawlPagesIndexed" : "CrawlPagesSkipped");
      return outcome.status;
    } catch (err) {
      if (delivery.receiveCount >= delivery.maxReceiveCount) {
        // The message goes to the dead-letter queue; the page must not hold the crawl open.
        logger.error("crawling a page failed on its last delivery", {
          crawlId,
          error: redactError(err),
        });
        await this.frontier.finishPage(crawl, page, {
          status: "failed",
          reason: "internal_error",
          message: "The page could not be processed",
        });
      }
      throw err;
    }
  }

  private async crawlPage(
    crawl: CrawlItem,
    page: CrawlPageItem,
  ): Promise<PageOutcome | "deferred"> {
    if (crawl.status !== "indexing" && !(await this.crawls.holdsSlot(crawl, page.pageKey))) {
      return stopped(crawl);
    }
    let robots: RobotsRules;
    try {
      robots = await this.deps.session.rules(page.url);
    } catch (err) {
      if (err instanceof FetchError) return fetchOutcome(err);
      throw err;
    }
    if (!robots.isAllowed(page.url)) return skipped("robots", "robots.txt disallows this URL");
    if (!(await this.awaitTurn(crawl, page, robots))) return "deferred";
    const scope = new CrawlScope(crawl);
    if (page.depth === 0) {
      // The page reader's thread starts meanwhile: its first page need not wait for it.
      warmPageReader();
      // Read before the seed itself, so a seed that redirects or fails still finds the site.
      await this.discover(crawl, scope, await this.sitemapUrls(crawl, page.url, robots), 1);
    }

    let fetched: FetchResult;
    const started = Date.now();
    try {
      fetched = await this.fetchPage(page.url);
      await this.observe(crawl, page, robots, { latencyMs: Date.now() - started });
    } catch (err) {
      if (!(err instanceof FetchError)) throw err;
      await this.observe(crawl, page, robots, { error: err });
      if (isTransient(err) && (page.attempts ?? 0) < MAX_PAGE_RETRIES) {
        const backoff = (this.deps.retryBaseMs ?? RETRY_BASE_MS) * 2 ** (page.attempts ?? 0);
        const at = Date.now() + Math.max(backoff, err.retryAfterMs ?? 0);
        if (await this.frontier.retryPage(crawl, page, at)) return "deferred";
      }
      if (err.status === 404 || err.status === 410) {
        // A page a source stands for is gone: mark the source (a re-crawl finds this).
        await this.deps.sources.markGone(crawl.workspaceId, page.url);
      }
      return isTransient(err)
        ? {
            status: "failed",
            reason: err.code,
            message: err.message,
            httpStatus: err.status ?? null,
          }
        : fetchOutcome(err);
    }
    if (fetched.type === "redirect") {
      const target = canonicalUrl(fetched.location);
      if (target) await this.discover(crawl, scope, [target], page.depth + 1);
      return {
        ...skipped("redirect", `Redirects to ${fetched.location}`),
        httpStatus: fetched.status,
      };
    }

    let extracted: ExtractedPage;
    try {
      const view = await viewPage(fetched, {
        mode: crawl.render ?? "auto",
        renderer: this.deps.renderer,
      });
      extracted = await extractPage(view.body, view.url, { charset: view.charset });
    } catch (err) {
      // A wall, a page that needs a browser, or one past the renderer's bounds: failed, saying so.
      if (err instanceof FetchError) return fetchOutcome(err);
      if (!(err instanceof ExtractionError)) throw err;
      if (err.code === "empty_content") return skipped("empty", err.message);
      return { status: "failed", reason: err.code, message: err.message };
    }
    const found = [...extracted.links, ...(extracted.canonical ? [extracted.canonical] : [])];
    await this.discover(crawl, scope, found, page.depth + 1);
    return this.index(crawl, page, scope, extracted);
  }

  /** Whether a fetched page becomes a source, and if so, creates it. */
  private async index(
    crawl: CrawlItem,
    page: CrawlPageItem,
    scope: CrawlScope,
    extracted: ExtractedPage,
  ): Promise<PageOutcome> {
    if (!extracted.index) return skipped("robots", "The page asks not to be indexed (noindex)");
    if (!scope.pathAllowed(new URL(page.url).pathname)) {
      // Only the seed gets here: it is always read for its links.
      return skipped("filter", SCOPE_MESSAGES.filter);
    }
    // A canonical URL the crawl may fetch stands for this page; one it may not is ignored.
    const canonical = extracted.canonical && new URL(extracted.canonical);
    if (
      canonical &&
      canonical.href !== page.url &&
      scope.onSite(canonical) &&
      scope.pathAllowed(canonical.pathname)
    ) {
      return skipped("duplicate", `The page names ${canonical.href} as its canonical URL`);
    }
    const hash = createHash("sha256").update(extracted.markdown).digest("hex").slice(0, 32);
    const twin = await this.contents.claim(page, hash);
    if (twin) return skipped("duplicate", `Same content as ${twin}`);
    if (!(await this.crawls.takeSlot(crawl, page.pageKey))) {
      const current = await this.crawls.get(crawl.workspaceId, crawl.crawlId);
      return current?.status === "indexing" ? overCap(crawl) : stopped(current);
    }
    // One source per URL: a page the workspace has already (from an earlier crawl, an add, or
    // an earlier delivery of this message) is refreshed with what was just read.
    let item: SourceItem;
    try {
      ({ item } = await this.deps.sources.addUrl(crawl.workspaceId, {
        id: page.sourceId,
        url: page.url,
        name: (toDisplayText(extracted.title ?? "") || page.url).slice(0, 200),
        snapshot: extracted.markdown,
        holder: crawl.refreshOf ?? crawl.crawlId,
        settings: { metadata: crawl.metadata, chunking: crawl.chunking },
      }));
    } catch (err) {
      // A new page past the workspace's sources cap is skipped, saying so; pages it has go on.
      if (!isDomainError(err, "limit_reached")) throw err;
      return skipped("source_limit", err.message);
    }
    return { status: "indexed", reason: null, message: null, sourceId: item.id };
  }

  /** Fetches a page, following only redirects that lead to the same canonical URL. */
  private async fetchPage(url: string): Promise<FetchResult> {
    let target = url;
    for (let hop = 0; ; hop++) {
      const result = await this.deps.fetcher.fetchOnce(target, { accept: PAGE_KINDS });
      if (result.type === "content" || hop >= MAX_SAME_PAGE_REDIRECTS) return result;
      if (canonicalUrl(result.location) !== url) return result;
      target = result.location;
    }
  }

  /**
   * Waits for this page's slot on its host: in the worker when it is close, otherwise by sending
   * the message back to come when it is (false: the page was deferred). Without politeness
   * (`CRAWL_POLITENESS_MS=0`, for tests and benchmarks, and no Crawl-delay) there is no pace.
   */
  private async awaitTurn(
    crawl: CrawlItem,
    page: CrawlPageItem,
    robots: RobotsRules,
  ): Promise<boolean> {
    const floorMs = this.floorMs(robots);
    if (floorMs <= 0) return true;
    const now = Date.now();
    const host = new URL(page.url).host;
    const turn = await this.pace.claimSlot(crawl, host, floorMs, now, MAX_INLINE_WAIT_MS);
    if ("retryAt" in turn) {
      await this.frontier.deferPage(crawl, page, turn.retryAt);
      return false;
    }
    const wait = turn.slot - now;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return true;
  }

  /** Adapts the host's pace to how a request went (paced crawls only, see `awaitTurn`). */
  private async observe(
    crawl: CrawlItem,
    page: CrawlPageItem,
    robots: RobotsRules,
    observation: Observation,
  ): Promise<void> {
    const floorMs = this.floorMs(robots);
    if (floorMs > 0) {
      await this.pace.observe(crawl, new URL(page.url).host, observation, floorMs);
    }
  }

  private discover(crawl: CrawlItem, scope: CrawlScope, urls: string[], depth: number) {
    const found: Discovery[] = [];
    for (const url of urls) {
      const verdict = scope.judge(url, depth);
      if (verdict === "outside" || verdict === "depth") continue;
      found.push({
        url,
        depth,
        skip: verdict && { reason: verdict, message: SCOPE_MESSAGES[verdict] },
      });
    }
    return this.frontier.discover(crawl, found);
  }

  /** Page URLs of the site's sitemaps: those robots.txt lists, or /sitemap.xml. */
  private async sitemapUrls(crawl: CrawlItem, seedUrl: string, robots: RobotsRules) {
    const start =
      robots.sitemaps.length > 0 ? robots.sitemaps : [`${new URL(seedUrl).origin}/sitemap.xml`];
    const load = async (url: string) => {
      try {
        const res = await this.deps.fetcher.fetch(url, { accept: ["xml", "text"] });
        return decodeText(res.body, res.charset);
      } catch (err) {
        if (err instanceof FetchError) return undefined;
        throw err;
      }
    };
    const urls = await readSitemaps(start, load, {
      maxUrls: maxDiscovered(crawl.maxPages),
      maxFiles: 20,
      maxDepth: 3,
    });
    return urls.map((url) => canonicalUrl(url)).filter((url): url is string => url !== null);
  }

  /**
   * The watchdog: a running crawl that made no progress for `stallMs` is recounted from its
   * pages. Nothing pending means it is done. A page whose message still waits in the queue (no
   * worker took it since it was sent) means the crawl waits behind a backlog: it is watched on,
   * however long that takes, until the queue's retention says the message is gone. Only pages
   * taken without a result (their worker crashed or timed out) stall it: they get their messages
   * once more; if that does not help either, the crawl fails with the reason. The watch of a crawl
   * that ended, however it ended, is its last: it lets the crawl's helper items expire.
   */
  private async watch(message: Extract<CrawlMessage, { kind: "crawl-watch" }>) {
    const crawl = await this.crawls.get(message.workspaceId, message.crawlId);
    if (!crawl) return "gone";
    if (crawl.status !== "indexing") {
      await this.expireHelpers(crawl);
      return "gone";
    }
    const idleMs = this.now() - Date.parse(crawl.updatedAt);
    if (idleMs < this.deps.stallMs) {
      await this.frontier.sendWatch(crawl);
      return "watching";
    }
    const { counts, queued } = await this.frontier.recount(crawl);
    if (queued.length === 0) {
      await this.crawls.end(crawl, "completed", null, counts);
      await this.expireHelpers(crawl);
      return "completed";
    }
    const retentionMs = this.deps.retentionMs ?? QUEUE_RETENTION_DAYS * 86_400_000;
    const waiting = queued.filter(
      (page) => !page.takenAt && this.now() - Date.parse(page.updatedAt) < retentionMs,
    );
    if (waiting.length > 0) {
      await this.frontier.sendWatch(crawl);
      return "waiting";
    }
    if ((crawl.nudges ?? 0) === 0) {
      await this.frontier.requeuePages(crawl, queued);
      await this.crawls.nudge(crawl);
      await this.frontier.sendWatch(crawl);
      return "nudged";
    }
    const minutes = Math.round(idleMs / 60_000);
    const reason = `No progress for ${minutes} minutes; ${queued.length} pages never finished`;
    await this.crawls.end(crawl, "failed", reason, counts);
    await this.expireHelpers(crawl);
    return "stalled";
  }

  /**
   * Lets an ended crawl's content claims, query variants and host paces expire now, its record
   * and pages staying. Their own expiry (`CRAWL_HELPER_DAYS`) removes them if this fails, so a
   * failure is logged and the watch still ends.
   */
  private async expireHelpers(crawl: CrawlItem): Promise<void> {
    try {
      await Promise.all([
        this.contents.expire(crawl),
        this.frontier.expireVariants(crawl),
        this.pace.expire(crawl),
      ]);
    } catch (error) {
      logger.warn("crawl helpers not expired; they expire on their own", {
        crawlId: crawl.crawlId,
        error,
      });
    }
  }
}

const overCap = (crawl: CrawlItem) =>
  skipped("over_cap", `The crawl indexed its maxPages (${crawl.maxPages}) pages`);

/** The outcome of a page whose crawl stopped before it: capped, cancelled or failed. */
function stopped(crawl: CrawlItem | undefined): PageOutcome {
  if (crawl?.status === "completed") return overCap(crawl);
  return skipped("cancelled", `The crawl was ${crawl?.status ?? "deleted"} before this page`);
}
