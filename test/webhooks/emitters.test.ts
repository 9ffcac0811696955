import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Events } from "../../lib/competitors/events.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { urlLoader, urlRefresher } from "../../lib/knowledge/indexing/url-loader.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { failStalledSources } from "../../lib/knowledge/sources/watchdog.js";
import { Uploads } from "../../lib/knowledge/uploads/uploads.js";
import { IndexMessage, recordHandler } from "../../lib/store/queue.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import type { WebhookEvents, WebhookEventType } from "../../lib/webhooks/events.js";
import { sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";

/**
 * Where events are emitted: each place that finishes a piece of work tells the webhooks port once,
 * with what a receiver needs (real stores and queue; the port records what it is told).
 */

const WS = "ws_emitters";
let aws: TestAws;
let site: Site;
let sources: Sources;
const told: Array<{ workspaceId: string; type: WebhookEventType; data: Record<string, unknown> }> =
  [];
const recorder: WebhookEvents = {
  emit: async (workspaceId, type, data) => {
    told.push({ workspaceId, type, data });
  },
};
const ofType = (type: WebhookEventType) => told.filter((t) => t.type === type);

beforeAll(async () => {
  [aws, site] = await Promise.all([startAws(), startSite()]);
  sources = sourcesOn(aws);
  const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 3000 });
  const text = textLoader(aws.blobs);
  const indexer = new Indexer({
    table: aws.table,
    blobs: aws.blobs,
    search: aws.search,
    chunking: { size: 400, overlap: 50 },
    loaders: {
      // A source named "Blank" reads as nothing, which fails it for good.
      text: async (source) => (source.name === "Blank" ? { text: " " } : text(source)),
      url: urlLoader({ fetcher, blobs: aws.blobs }),
    },
    refresher: urlRefresher({ fetcher, blobs: aws.blobs }),
    events: recorder,
  });
  const handle = recordHandler(IndexMessage, (m, d) => indexer.handle(m, d), 3);
  aws.queues.consume("index", async (event) => {
    for (const record of event.Records) await handle(record);
    return { batchItemFailures: [] };
  });
  site.route("/page", (_req: IncomingMessage, res) => {
    res
      .writeHead(200, { "content-type": "text/html; charset=utf-8", etag: '"one"' })
      .end(htmlPage("Page", `<article><h1>Page</h1>${prose("Steady content")}</article>`));
  });
});
afterAll(() => Promise.all([aws.close(), site.close()]));

describe("webhook events where work finishes", () => {
  it("the indexer tells source.indexed and source.failed, once each, with the source as the API shows it", async () => {
    const ok = await sources.createText(WS, "# Pricing\nPro costs $49 a month.", "Pricing");
    const blank = await sources.createText(WS, "nothing to see", "Blank");
    await aws.queues.idle();
    expect(ofType("source.indexed")).toMatchObject([
      { workspaceId: WS, data: { id: ok.id, name: "Pricing", status: "indexed", chunk_count: 1 } },
    ]);
    expect(ofType("source.failed")).toMatchObject([
      {
        workspaceId: WS,
        data: { id: blank.id, status: "failed", error_code: "empty_content" },
      },
    ]);
  });

  it("the watchdog tells source.failed for each source it fails as stalled", async () => {
    // Queued where nothing consumes it: the source stays indexing until the watchdog comes.
    const parked = new Sources({
      table: aws.table,
      blobs: aws.blobs,
      indexQueue: aws.queue("parked"),
    });
    const stuck = await parked.createText(WS, "Its message was lost.", "Stuck");
    told.length = 0;
    const limits = { queuedMs: 60_000, lastAttemptMs: 60_000 };
    expect(await failStalledSources(aws.table, limits, Date.now() + 120_000, recorder)).toBe(1);
    expect(await failStalledSources(aws.table, limits, Date.now() + 120_000, recorder)).toBe(0);
    expect(told).toMatchObject([
      {
        type: "source.failed",
        workspaceId: WS,
        data: { id: stuck.id, name: "Stuck", status: "failed", error_code: "stalled" },
      },
    ]);
  });

  it("a presigned upload that never arrives tells source.failed", async () => {
    const settings = { maxBytes: 1024 * 1024, urlTtlSeconds: 60, graceSeconds: 60 };
    const uploads = new Uploads({ ...aws, sources, events: recorder }, settings);
    const pending = await uploads.create(WS, {
      filename: "brochure.pdf",
      contentType: "application/pdf",
      bytes: 1000,
    });
    told.length = 0;
    expect(await uploads.expire(Date.now() + 121_000)).toMatchObject({ expired: 1 });
    expect(told).toMatchObject([
      {
        type: "source.failed",
        data: { id: pending.id, status: "failed", error_code: "upload_expired", type: "file" },
      },
    ]);
  });

  it("a refresh of a URL source tells refresh.completed with what it found", async () => {
    const url = `${site.origin}/page`;
    const first = await sources.addUrl(WS, { url, name: "Page" });
    await aws.queues.idle();
    told.length = 0;
    await sources.addUrl(WS, { url, name: "Page" });
    await aws.queues.idle();
    expect(told).toMatchObject([
      {
        type: "refresh.completed",
        data: { id: first.item.id, source_url_or_path: url, outcome: "unchanged" },
      },
    ]);
  });

  it("a crawl's end tells crawl.completed once, however often it is ended", async () => {
    const crawls = new Crawls({ table: aws.table, queue: aws.queue("crawl"), events: recorder });
    const crawl = await crawls.start(WS, {
      seedUrl: `${site.origin}/`,
      maxPages: 5,
      maxDepth: 1,
      includeSubdomains: false,
      includePaths: [],
      excludePaths: [],
    });
    told.length = 0;
    await crawls.cancel(WS, crawl.crawlId);
    await crawls.cancel(WS, crawl.crawlId);
    expect(told).toMatchObject([
      {
        type: "crawl.completed",
        data: { crawlId: crawl.crawlId, refreshOf: null, status: "cancelled", pagesIndexed: 0 },
      },
    ]);
  });

  it("each competitor event recorded tells competitor.event", async () => {
    told.length = 0;
    const recorded = await new Events(aws.table, recorder).record(
      WS,
      ["pricing", "hiring"].map((type) => ({
        competitorId: "comp_1",
        competitorDomain: "acme.com",
        type: type as "pricing" | "hiring",
        severity: "high" as const,
        title: `A ${type} change`,
        aiBrief: "brief",
        details: {
          change: "price_increased" as const,
          subject: "Pro",
          before: 10,
          after: 12,
          url: null,
        },
      })),
      new Date().toISOString(),
    );
    expect(told.map((t) => [t.type, t.data.id, t.data.title])).toEqual(
      recorded.map((e) => ["competitor.event", e.id, e.title]),
    );
  });
});
