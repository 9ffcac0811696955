import type { IncomingMessage } from "node:http";
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { urlLoader, urlRefresher } from "../../lib/knowledge/indexing/url-loader.js";
import type { SourceItem, Sources } from "../../lib/knowledge/sources/sources.js";
import type { Embedder } from "../../lib/llm/embeddings.js";
import { IndexMessage, recordHandler } from "../../lib/store/queue.js";
import { wsKey } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { llmFor } from "../llm/helpers.js";
import { retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { FakeOpenAI } from "../support/fake-openai.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";

/**
 * Sources that stay fresh (issue 17): one source per canonical URL, refreshes that reindex only
 * what changed (conditional requests, content hashes), pages gone marked, failures that say why,
 * and a dead-lettered source brought back by a redrive. Real stores, queue, site and model.
 */

const WS = "ws_fresh";
const MAX_RECEIVE = 3;

let aws: TestAws;
let site: Site;
let fake: FakeOpenAI;
let sources: Sources;

/** The page each path serves now, with an ETag of its version; `status` overrides it. */
const pages = new Map<string, { version: string; status?: number; headers?: object }>();
/** The If-None-Match each request to a path carried. */
const conditional: Array<{ path: string; ifNoneMatch: string | undefined }> = [];

function servePage(path: string) {
  site.route(path, (req: IncomingMessage, res, url) => {
    const page = pages.get(path);
    const ifNoneMatch = req.headers["if-none-match"];
    conditional.push({ path: url.pathname, ifNoneMatch });
    if (!page) return void res.writeHead(404).end();
    if (page.status) return void res.writeHead(page.status, { ...page.headers }).end("busy");
    const etag = `"${page.version}"`;
    if (ifNoneMatch === etag) return void res.writeHead(304, { etag }).end();
    res
      .writeHead(200, { "content-type": "text/html; charset=utf-8", etag })
      .end(
        htmlPage(path, `<article><h1>${path}</h1>${prose(`Version ${page.version}`)}</article>`),
      );
  });
}

const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 3000 });
const source = async (id: string) =>
  (await aws.table.get<SourceItem>(wsKey(WS), `KB#${id}`)) as SourceItem;
const settle = () => aws.queues.idle();

beforeAll(async () => {
  [aws, site, fake] = await Promise.all([startAws(), startSite(), FakeOpenAI.start()]);
  sources = sourcesOn(aws);
  const embedder = llmFor(fake, { maxRetries: 0, timeoutMs: 3000 }).embedder as Embedder;
  const indexer = new Indexer({
    table: aws.table,
    blobs: aws.blobs,
    search: aws.search,
    chunking: { size: 400, overlap: 50 },
    loaders: { text: textLoader(aws.blobs), url: urlLoader({ fetcher, blobs: aws.blobs }) },
    refresher: urlRefresher({ fetcher, blobs: aws.blobs }),
    embedder,
  });
  const processor = new BatchProcessor(EventType.SQS);
  const record = recordHandler(IndexMessage, (m, d) => indexer.handle(m, d), MAX_RECEIVE);
  aws.queues.consume("index", (event, context) =>
    processPartialResponse(event, record, processor, { context }),
  );
});
afterAll(() => Promise.all([aws.close(), site.close(), fake.close()]));
beforeEach(() => fake.reset());

describe("one source per page", () => {
  it("makes one source of two adds of one URL racing, and says which one created it", async () => {
    servePage("/race");
    pages.set("/race", { version: "r1" });
    const url = `${site.origin}/race`;
    const added = await Promise.all(
      Array.from({ length: 4 }, () => sources.addUrl(WS, { url, name: "Race" })),
    );
    expect(added.filter((a) => a.created)).toHaveLength(1);
    expect(new Set(added.map((a) => a.item.id)).size).toBe(1);
    await settle();
    const all = await aws.table.all<SourceItem>(wsKey(WS), "KB#");
    expect(all.filter((s) => s.source_url_or_path === url)).toHaveLength(1);
  });

  it("keeps an unchanged page indexed as it is, asking the site conditionally; reindexes a changed one", async () => {
    servePage("/pricing");
    pages.set("/pricing", { version: "v1" });
    const url = `${site.origin}/pricing`;
    const first = await sources.addUrl(WS, { url, name: "Pricing" });
    expect(first.created).toBe(true);
    await settle();
    const indexed = await source(first.item.id);
    expect(indexed).toMatchObject({ status: "indexed", revision: 1, etag: '"v1"' });
    expect(indexed.last_checked_at).not.toBeNull();
    expect(indexed.last_changed_at).toBe(indexed.indexed_at);

    const again = await sources.addUrl(WS, { url, name: "Pricing" });
    expect(again).toMatchObject({
      created: false,
      item: { id: first.item.id, status: "indexing", revision: 2 },
    });
    // What it had keeps answering while the refresh runs.
    const meanwhile = await retrieverOn(aws).search(WS, "Version v1", 5, {});
    expect(meanwhile.map((h) => h.source_id)).toContain(first.item.id);
    await settle();
    const unchanged = await source(first.item.id);
    expect(conditional.at(-1)).toEqual({ path: "/pricing", ifNoneMatch: '"v1"' });
    expect(unchanged).toMatchObject({
      status: "indexed",
      revision: 2,
      indexed_at: indexed.indexed_at,
      chunks_key: indexed.chunks_key,
      last_changed_at: indexed.last_changed_at,
    });
    expect(String(unchanged.last_checked_at) > String(indexed.last_checked_at)).toBe(true);

    pages.set("/pricing", { version: "v2" });
    await sources.addUrl(WS, { url, name: "Pricing" });
    await settle();
    const changed = await source(first.item.id);
    expect(changed).toMatchObject({ status: "indexed", revision: 3, etag: '"v2"' });
    expect(String(changed.last_changed_at) > String(indexed.last_changed_at)).toBe(true);
    const hits = await retrieverOn(aws).search(WS, "Version v2", 5, {});
    expect(hits.map((h) => h.source_id)).toContain(first.item.id);
  });

  it("compares by content when the site sends no validators: the same text changes nothing", async () => {
    site.route("/plain", (_req, res) => {
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(htmlPage("Plain", `<article>${prose("Plain")}</article>`));
    });
    const { item } = await sources.addUrl(WS, { url: `${site.origin}/plain`, name: "Plain" });
    await settle();
    const before = await source(item.id);
    await sources.reindex(WS, item.id, { refresh: true });
    await settle();
    expect(await source(item.id)).toMatchObject({
      status: "indexed",
      revision: 2,
      indexed_at: before.indexed_at,
      chunks_key: before.chunks_key,
    });
  });

  it("marks a page that is gone (410) without deleting it", async () => {
    servePage("/retired");
    pages.set("/retired", { version: "g1" });
    const { item } = await sources.addUrl(WS, { url: `${site.origin}/retired`, name: "Retired" });
    await settle();
    pages.set("/retired", { version: "g1", status: 410 });
    await sources.reindex(WS, item.id, { refresh: true });
    await settle();
    const gone = await source(item.id);
    expect(gone).toMatchObject({ status: "indexed", revision: 2 });
    expect(gone.gone_at).not.toBeNull();
    expect(gone.chunk_count).toBeGreaterThan(0);
  });

  it("answers with what a page had while it is indexed again, and leaves search if that fails", async () => {
    servePage("/moving");
    pages.set("/moving", { version: "m1" });
    const { item } = await sources.addUrl(WS, { url: `${site.origin}/moving`, name: "Moving" });
    await settle();
    // One retriever throughout: what it caches of the workspace must follow every change.
    const retriever = retrieverOn(aws);
    const found = async () =>
      (await retriever.search(WS, "Version m1", 5, {})).some((h) => h.source_id === item.id);
    expect(await found()).toBe(true);
    pages.set("/moving", { version: "m1", status: 404 });
    const again = await sources.reindex(WS, item.id);
    expect(again.status).toBe("indexing");
    expect(await found()).toBe(true);
    await settle();
    expect(await source(item.id)).toMatchObject({ status: "failed", error_code: "http_error" });
    expect(await found()).toBe(false);
  });

  it("frees a URL when its source is deleted: adding it again creates a new source", async () => {
    servePage("/again");
    pages.set("/again", { version: "a1" });
    const url = `${site.origin}/again`;
    const first = await sources.addUrl(WS, { url, name: "Again" });
    await settle();
    await sources.delete(WS, first.item.id);
    const second = await sources.addUrl(WS, { url, name: "Again" });
    expect(second.created).toBe(true);
    expect(second.item.id).not.toBe(first.item.id);
    await settle();
  });
});

describe("failures that say why", () => {
  it("names the site's status after retrying a busy site, and indexes one that recovers", async () => {
    servePage("/busy");
    pages.set("/busy", { version: "b1", status: 503, headers: { "retry-after": "0" } });
    const { item } = await sources.addUrl(WS, { url: `${site.origin}/busy`, name: "Busy" });
    await settle();
    const failed = await source(item.id);
    expect(failed).toMatchObject({ status: "failed", error_code: "http_error" });
    expect(failed.last_error).toContain("HTTP 503");
    expect(conditional.filter((r) => r.path === "/busy")).toHaveLength(MAX_RECEIVE);

    // A site down once is retried by the queue and indexed.
    let calls = 0;
    site.route("/flaky", (_req, res) => {
      calls++;
      if (calls === 1) return void res.writeHead(502).end();
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(htmlPage("Flaky", `<article>${prose("Flaky")}</article>`));
    });
    const flaky = await sources.addUrl(WS, { url: `${site.origin}/flaky`, name: "Flaky" });
    await settle();
    expect(await source(flaky.item.id)).toMatchObject({ status: "indexed" });
    expect(calls).toBe(2);
  });

  it("fails as embeddings_unavailable while the model is down; a redrive indexes it once it is back", async () => {
    fake.fallback("embeddings", { status: 503, message: "overloaded" });
    const item = await sources.createText(WS, "# Refunds\n\nRefunds take five days.", "Refunds");
    await settle();
    const failed = await source(item.id);
    expect(failed).toMatchObject({ status: "failed", error_code: "embeddings_unavailable" });
    expect(failed.last_error).toMatch(/embedding model is unavailable/);
    const dead = aws.queues.deadLetters("index").map((m) => JSON.parse(m.body).sourceId);
    expect(dead).toContain(item.id);

    fake.reset();
    expect(aws.queues.redrive("index")).toBe(dead.length);
    await settle();
    expect(await source(item.id)).toMatchObject({
      status: "indexed",
      error_code: null,
      last_error: null,
    });
    const hits = await retrieverOn(aws).search(WS, "refunds", 5, {});
    expect(hits.map((h) => h.source_id)).toContain(item.id);
  });
});
