import { gzipSync } from "node:zlib";
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { SQSRecord } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { SqsHandler } from "../../infra/local/queues.js";
import { Crawler } from "../../lib/knowledge/crawl/crawler.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { CrawlFrontier, type CrawlPageItem } from "../../lib/knowledge/crawl/frontier.js";
import { HostPace } from "../../lib/knowledge/crawl/host-pace.js";
import { type CrawlItem, CrawlRecords } from "../../lib/knowledge/crawl/records.js";
import { Indexer } from "../../lib/knowledge/indexing/indexer.js";
import { urlLoader } from "../../lib/knowledge/indexing/url-loader.js";
import type { SourceItem, Sources } from "../../lib/knowledge/sources/sources.js";
import { CrawlMessage, type IndexMessage, recordHandler } from "../../lib/store/queue.js";
import { wsKey } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { PoliteSession } from "../../lib/web/session.js";
import { sourcesOn, startAws, type TestAws } from "../support/aws.js";
import {
  htmlPage,
  prose,
  type Route,
  redirect,
  respond,
  type Site,
  startSite,
} from "../support/sites.js";
import { asWorker } from "../support/workers.js";

const WS = "ws_crawl_test";
const MAX_RECEIVE = 3;

/** What a Lambda with the Powertools batch pattern does with one record handler. */
function sqsHandler(record: (r: SQSRecord) => Promise<unknown>): SqsHandler {
  const processor = new BatchProcessor(EventType.SQS);
  return (event, context) => processPartialResponse(event, record, processor, { context });
}

interface Harness {
  crawls: Crawls;
  crawler: Crawler;
  /** Starts delivering the crawl (and index) queue to the workers. */
  consume(): void;
  queueName: string;
}

let aws: TestAws;
let sources: Sources;
const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 1500, maxBytes: 256 * 1024 });
let harnesses = 0;

/** Crawl service and worker on their own queue, so tests can choose when messages flow. */
function harness(
  options: { politenessMs?: number; now?: () => number; fetcher?: SafeFetcher } = {},
): Harness {
  const queueName = `crawl-${++harnesses}`;
  const queue = aws.queue(queueName);
  const crawler = new Crawler({
    table: aws.table,
    blobs: aws.blobs,
    queue,
    sources,
    fetcher: options.fetcher ?? fetcher,
    session: new PoliteSession(options.fetcher ?? fetcher, {
      politenessMs: options.politenessMs ?? 0,
    }),
    stallMs: 15 * 60_000,
    watchSeconds: 1,
    ...(options.now ? { now: options.now } : {}),
  });
  return {
    crawls: new Crawls({ table: aws.table, queue, watchSeconds: 1 }),
    crawler,
    queueName,
    consume: () =>
      aws.queues.consume(
        queueName,
        sqsHandler(recordHandler(CrawlMessage, (m, d) => crawler.handle(m, d), MAX_RECEIVE)),
        { batchSize: 5, concurrency: 2, ...asWorker("crawl-worker") },
      ),
  };
}

const settings = (seedUrl: string, maxPages = 100) => ({
  seedUrl,
  maxPages,
  maxDepth: 10,
  includeSubdomains: false,
  includePaths: [],
  excludePaths: [],
});

async function report(crawls: Crawls, crawlId: string): Promise<Map<string, CrawlPageItem>> {
  const pages = new Map<string, CrawlPageItem>();
  let cursor: string | undefined;
  do {
    const page = await crawls.pages(WS, crawlId, undefined, 200, cursor);
    for (const p of page.items) pages.set(new URL(p.url).pathname + new URL(p.url).search, p);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return pages;
}

async function crawlSources(crawlId: string): Promise<SourceItem[]> {
  const all = await aws.table.all<SourceItem>(wsKey(WS), "KB#");
  return all.filter((s) => s.crawl_id === crawlId);
}

beforeAll(async () => {
  aws = await startAws();
  sources = sourcesOn(aws);
  const indexer = new Indexer({
    table: aws.table,
    blobs: aws.blobs,
    search: aws.search,
    chunking: { size: 1200, overlap: 200 },
    loaders: { url: urlLoader({ fetcher, blobs: aws.blobs }) },
  });
  aws.queues.consume(
    "index",
    sqsHandler((record) =>
      indexer.handle(JSON.parse(record.body) as IndexMessage, {
        receiveCount: Number(record.attributes.ApproximateReceiveCount),
        maxReceiveCount: MAX_RECEIVE,
      }),
    ),
  );
});
afterAll(() => aws.close());

describe("a crawl of a small site with every kind of trouble", () => {
  let site: Site;
  let crawl: CrawlItem;
  let pages: Map<string, CrawlPageItem>;

  const article = (title: string, body = "", head = "") =>
    respond(htmlPage(title, `<article><h1>${title}</h1>${prose(title)}${body}</article>`, head));
  const calendar: Route = (_req, res, url) => {
    const month = Number(url.searchParams.get("month") ?? "0");
    res
      .writeHead(200, { "content-type": "text/html" })
      .end(
        htmlPage(
          `Events ${month}`,
          `<article>${prose(`Events of month ${month}`)}</article><a href="/calendar?month=${month + 1}">Next month</a>`,
        ),
      );
  };

  beforeAll(async () => {
    site = await startSite();
    const o = site.origin;
    const nav = [
      "/about",
      "/about?utm_source=nav&fbclid=abc",
      "/about/#team",
      "/blog/post-1",
      "/blog/post-2?ref=home",
      "/private/secret",
      "/calendar?month=1",
      "/old",
      "/docs",
      "/missing",
      "/huge",
      "/slow",
      "/bomb",
      "/deck.pdf",
      "/empty",
      "/blank",
      "/walled",
      "/copy",
      "/alias",
      "/noindex",
      "https://elsewhere.example/page",
      "mailto:hello@example.com",
    ]
      .map((href) => `<a href="${href}">${href}</a>`)
      .join(" ");
    const routes: Record<string, Route> = {
      "/robots.txt": respond(`User-agent: *\nDisallow: /private/\nSitemap: ${o}/sitemap.xml\n`, {
        "content-type": "text/plain",
      }),
      "/sitemap.xml": respond(
        `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[
          "/",
          "/about",
          "/orphan",
          "/blog/post-1?utm_campaign=sitemap",
        ]
          .map((p) => `<url><loc>${o}${p}</loc></url>`)
          .join("")}</urlset>`,
        { "content-type": "application/xml" },
      ),
      "/": article("Home", `<nav>${nav}</nav>`),
      "/about": article("About us"),
      "/copy": article("About us"),
      "/alias": article("About alias", "", `<link rel="canonical" href="${o}/about">`),
      "/orphan": article("Only in the sitemap"),
      "/blog/post-1": article("Post one", '<a href="/blog/post-2">next</a>'),
      "/blog/post-2": article("Post two", '<a href="/blog/post-1?utm_medium=x">prev</a>'),
      "/private/secret": article("Secret"),
      "/calendar": calendar,
      "/old": redirect("/older"),
      "/older": redirect("/moved", 302),
      "/moved": article("Moved here"),
      "/docs": redirect("/docs/"),
      "/docs/": article("Docs home"),
      "/huge": respond(htmlPage("Huge", prose("Huge", 2000))),
      "/slow": (req, res) => {
        res.writeHead(200, { "content-type": "text/html" });
        const timer = setInterval(() => res.write(" "), 20);
        req.on("close", () => clearInterval(timer));
      },
      "/bomb": respond(gzipSync(Buffer.alloc(30 * 1024 * 1024)), {
        "content-type": "text/html",
        "content-encoding": "gzip",
      }),
      "/deck.pdf": respond("%PDF-1.4", { "content-type": "application/pdf" }),
      "/empty": respond(htmlPage("App", '<div id="root"></div><script src="/app.js"></script>')),
      "/blank": respond(htmlPage("Blank", "<p>Soon.</p>")),
      "/walled": respond(htmlPage("Just a moment...", "<p>Checking your browser</p>")),
      "/noindex": article("Hidden", "", '<meta name="robots" content="noindex">'),
    };
    for (const [path, route] of Object.entries(routes)) site.route(path, route);

    const { crawls, consume } = harness({ politenessMs: 5 });
    const started = await crawls.start(WS, settings(`${o}/`));
    consume();
    await aws.queues.idle();
    crawl = await crawls.get(WS, started.crawlId);
    pages = await report(crawls, started.crawlId);
  });
  afterAll(() => site.close());

  it("completes, with counters that add up", () => {
    expect(crawl.status).toBe("completed");
    expect(crawl.finishedAt).not.toBeNull();
    expect(crawl.pagesIndexed + crawl.pagesSkipped + crawl.pagesFailed).toBe(crawl.pagesDiscovered);
    expect(crawl.pagesDiscovered).toBe(pages.size);
  });

  it("indexes the real pages once each, found by links and by the sitemap", () => {
    for (const path of ["/", "/about", "/orphan", "/blog/post-1", "/blog/post-2", "/docs"]) {
      expect([path, pages.get(path)?.status]).toEqual([path, "indexed"]);
    }
    expect(pages.get("/moved")?.status).toBe("indexed");
  });

  it("canonicalises URLs so tracking parameters, fragments and slashes never make a new page", () => {
    expect([...pages.keys()].filter((p) => p.includes("utm") || p.includes("ref="))).toEqual([]);
    expect(site.requests.filter((r) => r.includes("utm") || r.includes("fbclid"))).toEqual([]);
    for (const path of ["/", "/about", "/blog/post-1", "/blog/post-2"]) {
      expect([path, site.requests.filter((r) => r === path).length]).toEqual([path, 1]);
    }
  });

  it("honours robots.txt without ever requesting a disallowed page", () => {
    expect(pages.get("/private/secret")).toMatchObject({ status: "skipped", reason: "robots" });
    expect(site.requests.filter((r) => r.startsWith("/private"))).toEqual([]);
    expect(pages.get("/noindex")).toMatchObject({ status: "skipped", reason: "robots" });
  });

  it("says why every other URL was skipped or failed", () => {
    const outcome = (path: string) => [pages.get(path)?.status, pages.get(path)?.reason];
    expect(outcome("/old")).toEqual(["skipped", "redirect"]);
    expect(outcome("/older")).toEqual(["skipped", "redirect"]);
    expect(outcome("/missing")).toEqual(["skipped", "http_error"]);
    expect(pages.get("/missing")?.httpStatus).toBe(404);
    expect(outcome("/deck.pdf")).toEqual(["skipped", "non_html"]);
    // A page that needs scripts, in a worker without a browser, fails saying so.
    expect(outcome("/empty")).toEqual(["failed", "needs_browser"]);
    expect(outcome("/blank")).toEqual(["skipped", "empty"]);
    expect(outcome("/walled")).toEqual(["failed", "blocked"]);
    expect(pages.get("/walled")?.message).toContain("shows a Cloudflare challenge");
    expect(outcome("/alias")).toEqual(["skipped", "duplicate"]);
    expect(outcome("/huge")).toEqual(["failed", "too_large"]);
    expect(outcome("/bomb")).toEqual(["failed", "too_large"]);
    expect(outcome("/slow")).toEqual(["failed", "timeout"]);
    expect(pages.has("/elsewhere")).toBe(false);
  });

  it("indexes identical content once", () => {
    const twins = [pages.get("/about"), pages.get("/copy")].map((p) => p?.reason ?? p?.status);
    expect(twins.sort()).toEqual(["duplicate", "indexed"]);
  });

  it("stops the calendar trap", () => {
    const months = [...pages.keys()].filter((p) => p.startsWith("/calendar"));
    expect(months.length).toBeGreaterThan(2);
    expect(months.length).toBeLessThanOrEqual(20);
    expect(site.requests.filter((r) => r.startsWith("/calendar")).length).toBeLessThanOrEqual(20);
  });

  it("lets its helper items expire once it ended, keeping its record and its page report", async () => {
    const now = Math.floor(Date.now() / 1000);
    const items = await aws.table.all<{ pk: string; sk: string; expiresAt?: number }>(
      wsKey(WS),
      "CRAWL",
    );
    const mine = items.filter((i) => i.sk.split("#")[1] === crawl.crawlId);
    const helpers = mine.filter((i) => /^CRAWL(HASH|PATH|HOST)#/.test(i.sk));
    // Identical content, the calendar's variants and the site's host: one of each kind at least.
    for (const kind of ["CRAWLHASH#", "CRAWLPATH#", "CRAWLHOST#"]) {
      expect(helpers.filter((i) => i.sk.startsWith(kind)).length, kind).toBeGreaterThan(0);
    }
    for (const helper of helpers) expect(helper.expiresAt, helper.sk).toBeLessThanOrEqual(now);
    const report = mine.filter((i) => /^CRAWL(PAGE)?#/.test(i.sk));
    expect(report.length).toBe(pages.size + 1);
    expect(report.filter((i) => i.expiresAt !== undefined)).toEqual([]);
  });

  it("creates one url source per indexed page, indexed from the page already fetched", async () => {
    const created = await crawlSources(crawl.crawlId);
    const indexed = [...pages.values()].filter((p) => p.status === "indexed");
    expect(created.length).toBe(crawl.pagesIndexed);
    expect(created.map((s) => s.id).sort()).toEqual(indexed.map((p) => p.sourceId).sort());
    expect(new Set(created.map((s) => s.type))).toEqual(new Set(["url"]));
    expect(created.every((s) => s.status === "indexed")).toBe(true);
    const about = created.find((s) => s.source_url_or_path === `${site.origin}/about`);
    expect(about?.name).toBe("About us");
    expect(site.requests.filter((r) => r === "/orphan")).toHaveLength(1);
  });
});

describe("a crawl larger than maxPages", () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
    for (let i = 0; i < 40; i++) {
      const links = [1, 2, 3, 4].map((d) => `<a href="/p/${(i + d) % 40}">next ${d}</a>`);
      site.route(
        i === 0 ? "/" : `/p/${i}`,
        respond(htmlPage(`Page ${i}`, `<article>${prose(`Page ${i}`)}</article>${links.join("")}`)),
      );
    }
  });
  afterAll(() => site.close());

  it("ends completed with exactly maxPages indexed", async () => {
    const { crawls, consume } = harness();
    const started = await crawls.start(WS, settings(`${site.origin}/`, 5));
    expect(started.maxPages).toBe(5);
    consume();
    await aws.queues.idle();
    const crawl = await crawls.get(WS, started.crawlId);
    expect(crawl).toMatchObject({ status: "completed", pagesIndexed: 5 });
    expect(await crawlSources(crawl.crawlId)).toHaveLength(5);
    const pages = [...(await report(crawls, crawl.crawlId)).values()];
    expect(pages.filter((p) => p.status === "indexed")).toHaveLength(5);
    expect(pages.filter((p) => p.status === "queued")).toEqual([]);
    expect(pages.some((p) => p.reason === "over_cap")).toBe(true);
  });
});

describe("crawl control", () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite({
      "/": respond(htmlPage("Root", `<article>${prose("Root")}</article><a href="/a">a</a>`)),
      "/a": respond(htmlPage("A", `<article>${prose("A")}</article>`)),
    });
  });
  afterAll(() => site.close());

  it("cancels a running crawl: queued pages are skipped and nothing is fetched", async () => {
    const { crawls, consume } = harness();
    const started = await crawls.start(WS, settings(`${site.origin}/`));
    const cancelled = await crawls.cancel(WS, started.crawlId);
    expect(cancelled.status).toBe("cancelled");
    expect((await crawls.cancel(WS, started.crawlId)).status).toBe("cancelled");
    const before = site.requests.length;
    consume();
    await aws.queues.idle();
    const pages = [...(await report(crawls, started.crawlId)).values()];
    expect(pages.map((p) => [p.status, p.reason])).toEqual([["skipped", "cancelled"]]);
    expect(site.requests.length).toBe(before);
    expect(await crawlSources(started.crawlId)).toEqual([]);
  });

  it("treats a page message delivered twice at once as one page", async () => {
    const { crawls, crawler, queueName } = harness();
    const started = await crawls.start(WS, settings(`${site.origin}/a`));
    const [seed] = aws.queues.pending(queueName).map((b) => JSON.parse(b));
    const delivery = { receiveCount: 1, maxReceiveCount: MAX_RECEIVE };
    const outcomes = await Promise.all([
      crawler.handle(seed, delivery),
      crawler.handle(seed, delivery),
    ]);
    expect(outcomes).toContain("indexed");
    expect(await crawler.handle(seed, delivery)).toBe("repeated");
    expect(await crawlSources(started.crawlId)).toHaveLength(1);
    const crawl = await crawls.get(WS, started.crawlId);
    expect(crawl).toMatchObject({ status: "completed", pagesIndexed: 1, pagesDiscovered: 1 });
  });

  it("spaces requests to one host: a page whose turn is far off goes back to the queue", async () => {
    const { crawls, crawler, queueName } = harness({ politenessMs: 60_000 });
    const started = await crawls.start(WS, settings(`${site.origin}/`));
    const [seed] = aws.queues.pending(queueName).map((b) => JSON.parse(b));
    const delivery = { receiveCount: 1, maxReceiveCount: MAX_RECEIVE };
    expect(await crawler.handle(seed, delivery)).toBe("indexed");
    const next = aws.queues
      .pending(queueName)
      .map((b) => JSON.parse(b))
      .find((m) => m.kind === "crawl-page" && m.pageKey !== seed.pageKey);
    expect(await crawler.handle(next, delivery)).toBe("deferred");
    const deferred = aws.queues
      .pending(queueName)
      .map((b) => JSON.parse(b))
      .filter((m) => m.pageKey === next.pageKey);
    // The message delivered (still listed: this test delivers by hand) and the one sent back.
    expect(deferred).toHaveLength(2);
    const page = await crawls.pages(WS, started.crawlId, ["queued"], 200);
    expect(page.items.map((p) => p.pageKey)).toContain(next.pageKey);
    expect((await crawls.get(WS, started.crawlId)).pagesIndexed).toBe(1);
  });

  it("fails a crawl that stopped making progress, after one nudge", async () => {
    let now = Date.now();
    const { crawls, crawler, queueName } = harness({ now: () => now });
    const started = await crawls.start(WS, settings(`${site.origin}/`));
    const watch = { kind: "crawl-watch" as const, workspaceId: WS, crawlId: started.crawlId };
    const delivery = { receiveCount: 1, maxReceiveCount: MAX_RECEIVE };
    expect(await crawler.handle(watch, delivery)).toBe("watching");
    // A host's pace, as a page of the crawl would have left it.
    await new HostPace({ table: aws.table }).claimSlot(started, "site.example", 0, now, 1e9);
    // A worker took the seed and died with it.
    const take = await workerTakes(queueName, started);
    now += 60 * 60_000;
    expect(await crawler.handle(watch, delivery)).toBe("nudged");
    // Its message sent again waits in the queue: the crawl waits for it, then the taken page stalls.
    now += 60 * 60_000;
    expect(await crawler.handle(watch, delivery)).toBe("waiting");
    await take();
    expect(await crawler.handle(watch, delivery)).toBe("stalled");
    const crawl = await crawls.get(WS, started.crawlId);
    expect(crawl.status).toBe("failed");
    expect(crawl.lastError).toMatch(/No progress for \d+ minutes; 1 pages never finished/);
    // The watch that failed it let the crawl's helpers expire: no watch comes after it.
    const [pace] = await aws.table.all<{ pk: string; sk: string; expiresAt?: number }>(
      wsKey(WS),
      `CRAWLHOST#${started.crawlId}#`,
    );
    expect(pace?.expiresAt).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(await crawler.handle(watch, delivery)).toBe("gone");
  });
});

describe("a crawl waiting behind the queue's backlog", () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite({ "/": respond(htmlPage("Home", prose("home"))) });
  });
  afterAll(() => site.close());

  it("is neither nudged nor failed while its pages wait, however long, until their messages are gone", async () => {
    let now = Date.now();
    const { crawls, crawler, queueName } = harness({ now: () => now });
    const started = await crawls.start(WS, settings(`${site.origin}/`));
    const watch = { kind: "crawl-watch" as const, workspaceId: WS, crawlId: started.crawlId };
    const delivery = { receiveCount: 1, maxReceiveCount: MAX_RECEIVE };
    const pageMessages = () =>
      aws.queues.pending(queueName).filter((b) => JSON.parse(b).kind === "crawl-page");
    // Every other tenant's pages ahead of it: 15 minutes, hours, three days without a page taken.
    for (const hours of [0.25, 1, 5, 72]) {
      now = Date.now() + hours * 3_600_000;
      expect(await crawler.handle(watch, delivery)).toBe("waiting");
    }
    expect(pageMessages()).toHaveLength(1);
    expect((await crawls.get(WS, started.crawlId)).status).toBe("indexing");
    // Its turn comes: the page is crawled and the crawl completes.
    const [seed] = pageMessages().map((b) => JSON.parse(b));
    expect(await crawler.handle(seed, delivery)).toBe("indexed");
    expect((await crawls.get(WS, started.crawlId)).status).toBe("completed");
  });

  it("counts a page whose message outlived the queue's retention as stalled", async () => {
    let now = Date.now();
    const { crawls, crawler } = harness({ now: () => now });
    const started = await crawls.start(WS, settings(`${site.origin}/`));
    const watch = { kind: "crawl-watch" as const, workspaceId: WS, crawlId: started.crawlId };
    const delivery = { receiveCount: 1, maxReceiveCount: MAX_RECEIVE };
    now = Date.now() + 5 * 86_400_000;
    expect(await crawler.handle(watch, delivery)).toBe("nudged");
  });
});

/** Takes the crawl's queued seed page as a worker does; answers a second take, after a nudge. */
async function workerTakes(queueName: string, crawl: CrawlItem) {
  const frontier = new CrawlFrontier({
    table: aws.table,
    queue: aws.queue(queueName),
    watchSeconds: 1,
    records: new CrawlRecords({ table: aws.table }),
  });
  const take = async () => {
    const [page] = (await frontier.listPages(crawl, ["queued"], 10, undefined)).items;
    if (!page || !(await frontier.takePage(page))) throw new Error("no queued page to take");
  };
  await take();
  return take;
}

describe("a crawl cancelled while pages are in flight", () => {
  const slow = ["/slow/0", "/slow/1", "/slow/2"];
  const links = (paths: string[]) => paths.map((p) => `<a href="${p}">${p}</a>`).join(" ");
  let site: Site;
  let release: () => void;
  const arrived: string[] = [];

  beforeAll(async () => {
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    site = await startSite({
      "/": respond(htmlPage("Root", `<article>${prose("Root")}</article>${links(slow)}`)),
    });
    for (const [i, path] of slow.entries()) {
      // Each answers only once the test lets it, with a new link the crawl has not seen yet.
      site.route(path, async (_req, res) => {
        arrived.push(path);
        await released;
        res
          .writeHead(200, { "content-type": "text/html" })
          .end(
            htmlPage(
              `Slow ${i}`,
              `<article>${prose(`Slow ${i}`)}</article>${links([`/later/${i}`])}`,
            ),
          );
      });
    }
  });
  afterAll(() => site.close());

  it("records no new page, count or source once the in-flight pages finish", async () => {
    // The gate, not the fetch deadline, decides when the slow pages answer.
    const patient = new SafeFetcher({ allowPrivate: true, timeoutMs: 30_000 });
    const { crawls, consume } = harness({ fetcher: patient });
    const { crawlId } = await crawls.start(WS, settings(`${site.origin}/`));
    consume();
    await vi.waitFor(
      async () => {
        expect(arrived.sort()).toEqual(slow);
        expect((await crawls.get(WS, crawlId)).pagesIndexed).toBe(1);
      },
      { timeout: 20_000, interval: 20 },
    );

    const atCancel = await crawls.cancel(WS, crawlId);
    const pagesAtCancel = await report(crawls, crawlId);
    const sourcesAtCancel = (await crawlSources(crawlId)).map((s) => s.id).sort();
    expect(atCancel).toMatchObject({ status: "cancelled", pagesDiscovered: 4, pagesIndexed: 1 });
    expect([...pagesAtCancel.values()].filter((p) => p.status === "queued")).toHaveLength(3);
    expect(sourcesAtCancel).toHaveLength(1);

    release();
    await aws.queues.idle();

    const after = await crawls.get(WS, crawlId);
    const pagesAfter = await report(crawls, crawlId);
    expect(after).toMatchObject({
      status: "cancelled",
      finishedAt: atCancel.finishedAt,
      pagesDiscovered: atCancel.pagesDiscovered,
      pagesIndexed: atCancel.pagesIndexed,
      pagesFailed: atCancel.pagesFailed,
      // The counters stop at the cancel; the pages in flight are reported skipped, uncounted.
      pagesSkipped: atCancel.pagesSkipped,
    });
    expect([...pagesAfter.keys()].sort()).toEqual([...pagesAtCancel.keys()].sort());
    for (const path of slow) {
      expect([path, pagesAfter.get(path)?.status, pagesAfter.get(path)?.reason]).toEqual([
        path,
        "skipped",
        "cancelled",
      ]);
    }
    expect((await crawlSources(crawlId)).map((s) => s.id).sort()).toEqual(sourcesAtCancel);
    expect(site.requests.filter((r) => r.startsWith("/later"))).toEqual([]);
  });
});
