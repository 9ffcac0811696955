import type { IncomingMessage } from "node:http";
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Crawler } from "../../lib/knowledge/crawl/crawler.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { Indexer } from "../../lib/knowledge/indexing/indexer.js";
import { urlLoader, urlRefresher } from "../../lib/knowledge/indexing/url-loader.js";
import { runDueRefreshes } from "../../lib/knowledge/refresh/run.js";
import { dueSlot, slotOf, WINDOW_HOURS } from "../../lib/knowledge/sources/schedule.js";
import type { SourceItem, Sources } from "../../lib/knowledge/sources/sources.js";
import { Quotas } from "../../lib/limits/quotas.js";
import { CrawlMessage, IndexMessage, recordHandler } from "../../lib/store/queue.js";
import { wsKey } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { PoliteSession } from "../../lib/web/session.js";
import { roomyQuotas, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";
import { asWorker } from "../support/workers.js";

/**
 * Scheduled refresh (issue 17): the hourly run refreshes exactly the sources and crawls whose
 * slot is due, conditionally, charged to the page quota; a crawl's next run refreshes its pages,
 * adds new ones within its cap and marks gone ones, its pages keeping the first crawl's id.
 */

const WS = "ws_refresh";
let aws: TestAws;
let site: Site;
let sources: Sources;
let crawls: Crawls;
const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 3000 });
/** Path to its content version; absent answers 404. */
const versions = new Map<string, string>();
/** Conditional requests the site received, per path. */
const revalidated: string[] = [];

function serve(path: string, links: string[] = []) {
  site.route(path, (req: IncomingMessage, res) => {
    const version = versions.get(path);
    if (version === undefined) return void res.writeHead(404).end();
    const etag = `"${version}"`;
    if (req.headers["if-none-match"]) revalidated.push(path);
    if (req.headers["if-none-match"] === etag) return void res.writeHead(304, { etag }).end();
    const anchors = links.map((l) => `<a href="${l}">${l}</a>`).join(" ");
    res
      .writeHead(200, { "content-type": "text/html; charset=utf-8", etag })
      .end(htmlPage(path, `<article>${prose(`${path} ${version}`)}</article>${anchors}`));
  });
}

/** An hour, in the week of 2026-11-23 (a Monday), that falls in `slot` of a weekly or daily window. */
const hourOf = (slot: number) => new Date(Date.UTC(2026, 10, 22, 0, 30) + slot * 3_600_000);
const source = async (id: string) =>
  (await aws.table.get<SourceItem>(wsKey(WS), `KB#${id}`)) as SourceItem;

beforeAll(async () => {
  [aws, site] = await Promise.all([startAws(), startSite()]);
  sources = sourcesOn(aws);
  const crawlQueue = aws.queue<CrawlMessage>("crawl");
  crawls = new Crawls({ table: aws.table, queue: crawlQueue, watchSeconds: 1 });
  const indexer = new Indexer({
    table: aws.table,
    blobs: aws.blobs,
    search: aws.search,
    chunking: { size: 400, overlap: 50 },
    loaders: { url: urlLoader({ fetcher, blobs: aws.blobs }) },
    refresher: urlRefresher({ fetcher, blobs: aws.blobs }),
  });
  const crawler = new Crawler({
    table: aws.table,
    blobs: aws.blobs,
    queue: crawlQueue,
    sources,
    fetcher,
    session: new PoliteSession(fetcher, { politenessMs: 0 }),
    stallMs: 60_000,
    watchSeconds: 1,
  });
  const processor = new BatchProcessor(EventType.SQS);
  const indexRecord = recordHandler(IndexMessage, (m, d) => indexer.handle(m, d), 3);
  aws.queues.consume("index", (event, context) =>
    processPartialResponse(event, indexRecord, processor, { context }),
  );
  const crawlProcessor = new BatchProcessor(EventType.SQS);
  const crawlRecord = recordHandler(CrawlMessage, (m, d) => crawler.handle(m, d), 3);
  aws.queues.consume(
    "crawl",
    (event, context) => processPartialResponse(event, crawlRecord, crawlProcessor, { context }),
    asWorker("crawl-worker"),
  );
});
afterAll(() => Promise.all([aws.close(), site.close()]));

describe("slots", () => {
  it("spreads items over the window by a hash of their id, and finds the hour due", () => {
    const slots = Array.from({ length: 2_000 }, (_, i) => slotOf(`kb_${i}`, "daily"));
    const perHour = WINDOW_HOURS.daily;
    for (let hour = 0; hour < perHour; hour++) {
      const share = slots.filter((s) => s === hour).length / slots.length;
      expect(share, `hour ${hour}`).toBeGreaterThan(0.5 / perHour);
      expect(share, `hour ${hour}`).toBeLessThan(1.5 / perHour);
    }
    expect(slotOf("kb_x", "weekly")).toBe(slotOf("kb_x", "weekly"));
    expect(dueSlot("daily", new Date("2026-11-25T07:59:00Z"))).toBe(7);
    // Wednesday 07:00 is the week's hour 3 × 24 + 7.
    expect(dueSlot("weekly", new Date("2026-11-25T07:00:00Z"))).toBe(79);
    expect(dueSlot("weekly", hourOf(100))).toBe(100);
  });
});

describe("the hourly run", () => {
  it("checks the sources due this hour, conditionally, and leaves the others", async () => {
    serve("/daily");
    serve("/other");
    versions.set("/daily", "d1");
    versions.set("/other", "o1");
    const due = await sources.addUrl(WS, {
      url: `${site.origin}/daily`,
      name: "Daily",
      refresh: "daily",
    });
    const other = await sources.addUrl(WS, { url: `${site.origin}/other`, name: "Other" });
    await aws.queues.idle();
    const [before, otherBefore] = [await source(due.item.id), await source(other.item.id)];
    const hour = hourOf(slotOf(due.item.id, "daily"));

    const run = await runDueRefreshes(
      { table: aws.table, sources, crawls, quotas: roomyQuotas(aws.table) },
      hour,
    );
    expect(run).toMatchObject({ sources: 1 });
    await aws.queues.idle();
    const after = await source(due.item.id);
    expect(revalidated).toContain("/daily");
    // Checked as a reindex would (a new revision), and settled at once: the page had not changed.
    expect(after).toMatchObject({ status: "indexed", revision: 2, indexed_at: before.indexed_at });
    expect(String(after.last_checked_at) > String(before.last_checked_at)).toBe(true);
    expect((await source(other.item.id)).last_checked_at).toBe(otherBefore.last_checked_at);

    // A slot of another hour leaves it alone.
    const elsewhere = hourOf((slotOf(due.item.id, "daily") + 1) % 24);
    await runDueRefreshes(
      { table: aws.table, sources, crawls, quotas: roomyQuotas(aws.table) },
      elsewhere,
    );
    await aws.queues.idle();
    expect((await source(due.item.id)).last_checked_at).toBe(after.last_checked_at);
  });

  it("counts against the page quota: a spent quota leaves the refresh for its next slot", async () => {
    serve("/quota");
    versions.set("/quota", "q1");
    const { item } = await sources.addUrl(WS, {
      url: `${site.origin}/quota`,
      name: "Quota",
      refresh: "weekly",
    });
    await aws.queues.idle();
    const before = await source(item.id);
    const spent = new Quotas(aws.table, {
      crawl_pages: 0,
      upload_bytes: 0,
      model_calls: 0,
      competitor_checks: 0,
      exports: 0,
      reindexes: 0,
    });
    const run = await runDueRefreshes(
      { table: aws.table, sources, crawls, quotas: spent },
      hourOf(slotOf(item.id, "weekly")),
    );
    // Other sources of the workspace may share the slot (it is a hash of the id): none is run.
    expect(run.sources).toBe(0);
    expect(run.skipped).toBeGreaterThanOrEqual(1);
    await aws.queues.idle();
    expect((await source(item.id)).last_checked_at).toBe(before.last_checked_at);
  });

  it("runs a scheduled crawl again: pages refreshed, a new page added, a gone page marked", async () => {
    versions.set("/docs/", "1");
    versions.set("/docs/a", "1");
    versions.set("/docs/b", "1");
    serve("/docs/", ["/docs/a", "/docs/b"]);
    serve("/docs/a");
    serve("/docs/b");
    const first = await crawls.start(
      WS,
      {
        seedUrl: `${site.origin}/docs/`,
        maxPages: 10,
        maxDepth: 3,
        includeSubdomains: false,
        includePaths: [],
        excludePaths: [],
      },
      undefined,
      { refresh: "daily" },
    );
    await aws.queues.idle();
    const bySource = async () =>
      (await aws.table.all<SourceItem>(wsKey(WS), "KB#")).filter(
        (s) => s.crawl_id === first.crawlId,
      );
    const before = await bySource();
    expect(before).toHaveLength(3);

    // The site changes: /docs/a changes, /docs/b is gone, /docs/c is new.
    versions.set("/docs/a", "2");
    versions.delete("/docs/b");
    versions.set("/docs/c", "1");
    serve("/docs/", ["/docs/a", "/docs/b", "/docs/c"]);
    serve("/docs/c");
    const run = await runDueRefreshes(
      { table: aws.table, sources, crawls, quotas: roomyQuotas(aws.table) },
      hourOf(slotOf(first.crawlId, "daily")),
    );
    expect(run).toMatchObject({ crawls: 1 });
    await aws.queues.idle();

    const after = await bySource();
    const byPath = new Map(after.map((s) => [new URL(String(s.source_url_or_path)).pathname, s]));
    expect([...byPath.keys()].sort()).toEqual(["/docs/", "/docs/a", "/docs/b", "/docs/c"]);
    const old = new Map(before.map((s) => [s.id, s]));
    expect(byPath.get("/docs/a")?.revision).toBe(
      (old.get(byPath.get("/docs/a")?.id ?? "")?.revision ?? 0) + 1,
    );
    const root = byPath.get("/docs/");
    expect(root).toMatchObject({
      revision: 2,
      status: "indexed",
      indexed_at: old.get(root?.id ?? "")?.indexed_at,
    });
    expect(byPath.get("/docs/b")).toMatchObject({ status: "indexed" });
    expect(byPath.get("/docs/b")?.gone_at).not.toBeNull();
    expect(byPath.get("/docs/c")).toMatchObject({ status: "indexed", revision: 1 });

    const runs = await crawls.list(WS, 10);
    const rerun = runs.items.find((c) => c.refreshOf === first.crawlId);
    expect(rerun).toMatchObject({ status: "completed", pagesIndexed: 3 });
    // The run owns the pages it refreshed or added; the gone page is no longer among them.
    const owned = await sources.list(WS, { crawl_id: [rerun?.crawlId ?? ""] }, 10);
    expect(owned.items.map((s) => new URL(String(s.source_url_or_path)).pathname).sort()).toEqual([
      "/docs/",
      "/docs/a",
      "/docs/c",
    ]);
    // A run still going holds the next one back.
    expect((await crawls.get(WS, first.crawlId)).lastRunId).toBe(rerun?.crawlId);
  });
});
