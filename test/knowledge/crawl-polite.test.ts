import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Crawler, MAX_PAGE_RETRIES } from "../../lib/knowledge/crawl/crawler.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { CrawlMessage, recordHandler } from "../../lib/store/queue.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { PoliteSession } from "../../lib/web/session.js";
import { sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";
import { asWorker } from "../support/workers.js";

/**
 * A crawl is polite and patient at once (issue 17): transient failures (429, 5xx) are retried
 * with backoff a bounded number of times, a 429's Retry-After pauses the host, and only then
 * does a page count as failed, with the site's status.
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
  // Busy twice (asking for a 1 s pause), then fine.
  site.route("/busy", (_req, res) => {
    note("/busy");
    if ((hits.get("/busy") ?? []).length <= 2) {
      return void res.writeHead(429, { "retry-after": "1" }).end();
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

describe("a crawl meeting a busy and a broken page", () => {
  it("retries with backoff, honours Retry-After, and fails a page only after its retries", async () => {
    const started = await crawls.start(WS, {
      seedUrl: `${site.origin}/`,
      maxPages: 10,
      maxDepth: 2,
      includeSubdomains: false,
      includePaths: [],
      excludePaths: [],
    });
    await aws.queues.idle();
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

    // Each retry of the busy page came after the second the site asked for.
    const busy = hits.get("/busy") ?? [];
    expect(busy).toHaveLength(3);
    for (let i = 1; i < busy.length; i++) {
      expect((busy[i] ?? 0) - (busy[i - 1] ?? 0)).toBeGreaterThanOrEqual(950);
    }
    // About 40 s alone: each retry and the watch go back through the queue with delays of whole
    // seconds. Room for a loaded machine; the time is not what this test asserts.
  }, 120_000);
});
