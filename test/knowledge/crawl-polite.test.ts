import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Crawler, MAX_PAGE_RETRIES } from "../../lib/knowledge/crawl/crawler.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { CrawlMessage, recordHandler } from "../../lib/store/queue.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { PoliteSession } from "../../lib/web/session.js";
import { sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { drainOnClock } from "../support/queue-clock.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";
import { asWorker } from "../support/workers.js";

/**
 * A crawl is polite and patient at once (issue 17): transient failures (429, 5xx) are retried
 * with backoff a bounded number of times, a 429's Retry-After pauses the host, and only then
 * does a page count as failed, with the site's status. Each retry and the crawl's watch go back
 * through the queue with delays of whole seconds; those are not waited for: the clock (Date only)
 * is moved to each delayed message's time, which the site's own notes of when it was asked read.
 */

const WS = "ws_polite";
let aws: TestAws;
let site: Site;
let crawls: Crawls;
/** When each path was requested (epoch ms). */
const hits = new Map<string, number[]>();

const article = (title: string, links = "") =>
  htmlPage(title, `<article><h1>${title}</h1>${prose(title)}</article>${links}`);

beforeAll(async () => {
  [aws, site] = await Promise.all([startAws(), startSite()]);
  const note = (path: string) => hits.set(path, [...(hits.get(path) ?? []), Date.now()]);
  site.route("/", (_req, res) => {
    note("/");
    res
      .writeHead(200, { "content-type": "text/html" })
      .end(article("Home", '<a href="/busy">busy</a> <a href="/broken">broken</a>'));
  });
  // Busy twice (asking for a 5 s pause: longer than a retry's own backoff and than the 1 s a
  // queue delay is rounded up to, so only a crawl that honours it waits that long), then fine.
  site.route("/busy", (_req, res) => {
    note("/busy");
    if ((hits.get("/busy") ?? []).length <= 2) {
      return void res.writeHead(429, { "retry-after": "5" }).end();
    }
    res.writeHead(200, { "content-type": "text/html" }).end(article("Busy"));
  });
  site.route("/broken", (_req, res) => {
    note("/broken");
    res.writeHead(500).end();
  });
  const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 3000 });
  const queue = aws.queue<CrawlMessage>("crawl-polite");
  crawls = new Crawls({ table: aws.table, queue, watchSeconds: 1 });
  const crawler = new Crawler({
    table: aws.table,
    blobs: aws.blobs,
    queue,
    sources: sourcesOn(aws),
    fetcher,
    session: new PoliteSession(fetcher, { politenessMs: 10 }),
    stallMs: 60_000,
    watchSeconds: 1,
    retryBaseMs: 50,
  });
  const processor = new BatchProcessor(EventType.SQS);
  const record = recordHandler(CrawlMessage, (m, d) => crawler.handle(m, d), 3);
  aws.queues.consume(
    "crawl-polite",
    (event, context) => processPartialResponse(event, record, processor, { context }),
    asWorker("crawl-worker"),
  );
});
afterAll(() => Promise.all([aws.close(), site.close()]));
afterEach(() => {
  vi.useRealTimers();
});

describe("a crawl meeting a busy and a broken page", () => {
  it("retries with backoff, honours Retry-After, and fails a page only after its retries", async () => {
    vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
    const started = await crawls.start(WS, {
      seedUrl: `${site.origin}/`,
      maxPages: 10,
      maxDepth: 2,
      includeSubdomains: false,
      includePaths: [],
      excludePaths: [],
    });
    await drainOnClock(aws.queues);
    const crawl = await crawls.get(WS, started.crawlId);
    expect(crawl).toMatchObject({ status: "completed", pagesIndexed: 2, pagesFailed: 1 });

    const pages = (await crawls.pages(WS, started.crawlId, undefined, 50)).items;
    const byPath = new Map(pages.map((p) => [new URL(p.url).pathname, p]));
    expect(byPath.get("/busy")).toMatchObject({ status: "indexed", attempts: 2 });
    expect(byPath.get("/broken")).toMatchObject({
      status: "failed",
      reason: "http_error",
      httpStatus: 500,
      attempts: MAX_PAGE_RETRIES,
    });
    expect(hits.get("/broken")).toHaveLength(MAX_PAGE_RETRIES + 1);

    // Each retry of the busy page came after the 5 s the site asked for (on the moved clock: a
    // retry sent back too early would have been delivered before the clock got there).
    const busy = hits.get("/busy") ?? [];
    expect(busy).toHaveLength(3);
    for (let i = 1; i < busy.length; i++) {
      expect((busy[i] ?? 0) - (busy[i - 1] ?? 0)).toBeGreaterThanOrEqual(4_950);
    }
    // A hang guard, not a speed limit: the work takes seconds, the pace's short waits included.
  }, 60_000);
});
