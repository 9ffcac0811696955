import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Indexer, type StoredChunks } from "../../lib/knowledge/indexing/indexer.js";
import { urlLoader } from "../../lib/knowledge/indexing/url-loader.js";
import { type SourceItem, Sources, sourceBlobPrefix } from "../../lib/knowledge/sources/sources.js";
import { wsKey } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { startAws, type TestAws } from "../support/aws.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

const WS = "ws_url_loader";
const delivery = { receiveCount: 1, maxReceiveCount: 3 };

describe("URL sources", () => {
  let aws: TestAws;
  let site: Site;
  let sources: Sources;
  const article = htmlPage(
    "Launch notes",
    `<article><h1>Launch notes</h1>${prose("Intro")}<h2>Pricing</h2>${prose("Pricing")}</article>`,
  );

  const indexerWith = (fetcher: SafeFetcher) =>
    new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      search: aws.search,
      chunking: { size: 1200, overlap: 200 },
      loaders: { url: urlLoader({ fetcher, blobs: aws.blobs }) },
    });
  let local: Indexer;

  async function indexUrl(url: string, indexer = local): Promise<SourceItem> {
    const source = await sources.create(WS, { type: "url", name: url, source_url_or_path: url });
    await indexer.handle(
      { kind: "index", workspaceId: WS, sourceId: source.id, revision: 1 },
      delivery,
    );
    return sources.get(WS, source.id);
  }

  beforeAll(async () => {
    aws = await startAws();
    sources = new Sources({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("index") });
    local = indexerWith(new SafeFetcher({ allowPrivate: true, timeoutMs: 2000 }));
    site = await startSite({
      "/article": respond(article),
      "/notes.txt": respond("Plain notes about the launch.", { "content-type": "text/plain" }),
      "/empty": respond(htmlPage("App", '<div id="root"></div>')),
      "/deck.pdf": respond("%PDF-1.4", { "content-type": "application/pdf" }),
      "/deep": respond(htmlPage("Deep", `${"<div>".repeat(5_000)}${prose("Deep")}`)),
      "/challenge": respond(
        htmlPage(
          "Just a moment...",
          '<div id="challenge-running">Checking if the site connection is secure</div><script>window._cf_chl_opt = {};</script>',
        ),
        { "content-type": "text/html" },
        503,
      ),
      "/captcha": respond(
        htmlPage(
          "Shop",
          '<p>Please confirm you are not a robot.</p><div class="g-recaptcha"></div>',
        ),
      ),
      "/login": respond(
        htmlPage(
          "Sign in to Shop",
          '<form><input name="email"><input type="password" name="password"><button>Sign in</button></form>',
        ),
      ),
      "/consent-only": respond(
        htmlPage(
          "Shop",
          '<div id="onetrust-consent-sdk"><p>We use cookies to give you the best experience on our website and to measure our audience. Accept all cookies or manage your preferences.</p></div>',
        ),
      ),
    });
  });
  afterAll(async () => {
    await site.close();
    await aws.close();
  });

  it("indexes the readable content with its title and headings", async () => {
    const source = await indexUrl(`${site.origin}/article`);
    expect(source).toMatchObject({ status: "indexed", last_error: null });
    const stored = await aws.blobs.getJson<StoredChunks>(source.chunks_key ?? "");
    const headings = stored?.chunks.map((c) => c.heading);
    expect(headings).toContain("Launch notes");
    expect(headings).toContain("Launch notes > Pricing");
    expect(stored?.chunks.map((c) => c.text).join("\n")).toContain("Pricing paragraph 1");
  });

  it("indexes plain text as it is", async () => {
    expect((await indexUrl(`${site.origin}/notes.txt`)).status).toBe("indexed");
  });

  it.each([
    ["/missing", "http_error", "404"],
    [
      "/empty",
      "needs_browser",
      "/empty needs scripts to show its content (its app root (#root) is empty)",
    ],
    [
      "/challenge",
      "blocked",
      "/challenge answered HTTP 503 with a Cloudflare challenge instead of the page",
    ],
    ["/captcha", "blocked", "/captcha shows a captcha instead of its content"],
    ["/login", "blocked", "/login shows a login wall"],
    ["/consent-only", "blocked", "only a cookie-consent banner"],
    ["/deck.pdf", "unsupported_content_type", "application/pdf"],
    ["/deep", "too_complex", "/deep: The page nests elements more than 256 levels deep"],
  ])("fails %s with %s and a readable last_error", async (path, code, words) => {
    const source = await indexUrl(`${site.origin}${path}`);
    expect(source).toMatchObject({ status: "failed", error_code: code });
    expect(source.last_error).toContain(words);
  });

  it("reads a page that needs scripts as it was sent under render never", async () => {
    const url = `${site.origin}/empty`;
    const created = await sources.create(WS, {
      type: "url",
      name: url,
      source_url_or_path: url,
      render: "never",
    });
    await local.handle(
      { kind: "index", workspaceId: WS, sourceId: created.id, revision: 1 },
      delivery,
    );
    const source = await sources.get(WS, created.id);
    expect(source).toMatchObject({
      status: "failed",
      error_code: "empty_content",
      render: "never",
    });
  });

  it("refuses a private target without connecting when private URLs are not allowed", async () => {
    const before = site.requests.length;
    const strict = indexerWith(new SafeFetcher({ allowPrivate: false }));
    const source = await indexUrl(`${site.origin}/article`, strict);
    expect(source).toMatchObject({ status: "failed", error_code: "blocked_address" });
    expect(source.last_error).toContain("127.0.0.1");
    expect(site.requests.length).toBe(before);
  });

  it("re-fetches on reindex and keeps the chunks of unchanged content", async () => {
    const first = await indexUrl(`${site.origin}/article`);
    const fetches = site.requests.filter((r) => r === "/article").length;
    const again = await sources.reindex(WS, first.id);
    await local.handle(
      { kind: "index", workspaceId: WS, sourceId: first.id, revision: again.revision },
      delivery,
    );
    const second = await sources.get(WS, first.id);
    expect(site.requests.filter((r) => r === "/article").length).toBe(fetches + 1);
    expect(second).toMatchObject({ status: "indexed", chunks_key: first.chunks_key });
  });

  it("reads a crawl's stored page for the first revision instead of fetching again", async () => {
    const id = "kb_01JD3Q8Y5V2N6W3KX9T7M4PZ8R";
    const contentKey = `${sourceBlobPrefix(WS, id)}page.md`;
    await aws.blobs.put(
      contentKey,
      "# Stored\n\nThe crawl already read this page for us.",
      "text/markdown",
    );
    const before = site.requests.length;
    await sources.create(WS, {
      id,
      type: "url",
      name: "stored",
      source_url_or_path: `${site.origin}/article`,
      content_key: contentKey,
    });
    await local.handle({ kind: "index", workspaceId: WS, sourceId: id, revision: 1 }, delivery);
    expect(site.requests.length).toBe(before);
    const item = await aws.table.get<SourceItem>(wsKey(WS), `KB#${id}`);
    expect(item?.status).toBe("indexed");
  });
});
