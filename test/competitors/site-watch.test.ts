import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Change } from "../../lib/competitors/diff.js";
import type { Visit } from "../../lib/competitors/observe.js";
import { pageReader } from "../../lib/competitors/page-reader.js";
import { CheckSession } from "../../lib/competitors/session.js";
import { SiteWatch, watchedPage, withoutPostPages } from "../../lib/competitors/site-watch.js";
import { HostPace } from "../../lib/web/session.js";
import { startAws, type TestAws } from "../support/aws.js";
import { htmlPage, respond, type Site, startSite } from "../support/sites.js";
import { fixtureFetcher } from "./world.js";

const xml = { "content-type": "application/xml" };
const text = { "content-type": "text/plain" };

const sitemap = (origin: string, paths: string[]) =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths
    .map((path) => `<url><loc>${origin}${path}</loc></url>`)
    .join("")}</urlset>`;

/** The pages of the fixture site's sitemap before any change: what matters and what is noise. */
const BASE = [
  "/",
  "/pricing",
  "/product/analytics",
  "/features/reports",
  "/careers",
  "/blog/launching-v2",
  "/about",
  "/legal/terms",
];

/** What a blog archive adds besides a post: pages, tags, authors, dates, locales, feeds, files. */
const ARCHIVE_NOISE = [
  "/blog/page/2",
  "/blog/page/3",
  "/blog/tag/pricing",
  "/blog/category/news",
  "/blog/author/jane",
  "/blog/2025/01",
  "/blog/feed",
  "/de/pricing",
  "/fr-fr/product/analytics",
  "/blog/launching-v2?utm_source=x",
  "/product/analytics/",
  "/product/brochure.pdf",
];

describe("which pages the site watch keeps", () => {
  const home = "https://www.acme.com/";
  const key = (url: string) => watchedPage(url, home)?.key;

  it("keeps the pages under the paths that matter, with their area", () => {
    expect(watchedPage("https://acme.com/pricing", home)?.area).toBe("pricing");
    expect(watchedPage("https://acme.com/product/new-thing", home)?.area).toBe("product");
    expect(watchedPage("https://acme.com/features/sso", home)?.area).toBe("features");
    expect(watchedPage("https://acme.com/vs/us", home)?.area).toBe("compare");
    expect(watchedPage("https://acme.com/acme-vs-us", home)?.area).toBe("compare");
    expect(watchedPage("https://acme.com/compare/us", home)?.area).toBe("compare");
    expect(watchedPage("https://acme.com/careers/pm", home)?.area).toBe("careers");
    expect(watchedPage("https://acme.com/blog/a-post", home)?.area).toBe("blog");
  });

  it("drops other paths, other sites, archives, feeds and files", () => {
    for (const url of [
      "https://acme.com/about",
      "https://acme.com/",
      "https://evil.example/pricing",
      "https://acme.com/blog/page/2",
      "https://acme.com/blog/tag/x",
      "https://acme.com/blog/category/x",
      "https://acme.com/blog/author/x",
      "https://acme.com/blog/2024",
      "https://acme.com/blog/2024/05",
      "https://acme.com/blog/feed",
      "https://acme.com/product/sheet.pdf",
    ]) {
      expect(watchedPage(url, home), url).toBeUndefined();
    }
  });

  it("reads a page in another locale, with a slash, a query or www as the same page", () => {
    const pricing = key("https://acme.com/pricing");
    expect(pricing).toBe("acme.com/pricing");
    for (const url of [
      "https://www.acme.com/pricing/",
      "https://acme.com/de/pricing",
      "https://acme.com/en-GB/pricing",
      "https://acme.com/pt_BR/Pricing",
      "https://acme.com/pricing?ref=nav#plans",
    ]) {
      expect(key(url), url).toBe(pricing);
    }
  });
});

describe("new pages that are posts", () => {
  const added = (url: string): Change => ({
    type: "content",
    kind: "page_added",
    subject: new URL(url).pathname,
    url,
    before: null,
    after: { url, title: null },
  });
  const post = (url: string): Change => ({
    type: "content",
    kind: "post_published",
    subject: "Launch",
    url,
    before: null,
    after: { title: "Launch", url, date: "2025-06-01" },
  });

  it("are told once, by the post's event; other new blog and product pages stay", () => {
    const changes = [
      post("https://acme.com/blog/launch"),
      // The sitemap names the post's page with www and a slash: the same page.
      added("https://www.acme.com/blog/launch/"),
      added("https://acme.com/blog/press-kit"),
      added("https://acme.com/vs/us"),
    ];
    expect(withoutPostPages(changes).map((c) => `${c.kind} ${c.url}`)).toEqual([
      "post_published https://acme.com/blog/launch",
      "page_added https://acme.com/blog/press-kit",
      "page_added https://acme.com/vs/us",
    ]);
    // Without the post's event the new page is the only news of it, and is kept.
    expect(withoutPostPages(changes.slice(1))).toEqual(changes.slice(1));
  });
});

describe("the site watch against a fixture site", () => {
  let aws: TestAws;
  let site: Site;
  let paths: string[];
  let watch: SiteWatch;
  const pace = new HostPace();
  const competitor = { workspaceId: "ws_watch", id: "comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R" };

  const visit = (maxFetches = 10): Visit => ({
    session: new CheckSession(fixtureFetcher, {
      maxFetches,
      deadline: Date.now() + 60_000,
      politenessMs: 0,
      requestTimeoutMs: 5_000,
      pace,
    }),
    read: pageReader(),
  });
  const check = (v = visit()) =>
    watch.changes(v, competitor, `${site.origin}/`, new Date().toISOString());
  const kinds = (changes: Change[]) => changes.map((c) => `${c.kind} ${c.subject}`).sort();

  beforeAll(async () => {
    [aws, site] = await Promise.all([startAws(), startSite()]);
    watch = new SiteWatch(aws.blobs);
    paths = [...BASE];
    site.route("/robots.txt", respond(`Sitemap: ${site.origin}/sitemap.xml\n`, text));
    site.route("/sitemap.xml", (_req, res) => {
      res.writeHead(200, xml).end(sitemap(site.origin, paths));
    });
  });

  afterAll(async () => {
    await Promise.all([aws.close(), site.close()]);
  });

  it("takes the first listing as the baseline: no change", async () => {
    expect(await check()).toEqual([]);
  });

  it("reports a new comparison page and a new product page, and nothing for archive noise", async () => {
    paths = [...BASE, "/vs/us", "/product/new-thing", ...ARCHIVE_NOISE];
    const changes = await check();
    expect(kinds(changes)).toEqual(["page_added /product/new-thing", "page_added /vs/us"]);
    expect(changes.find((c) => c.subject === "/vs/us")).toMatchObject({
      type: "content",
      url: `${site.origin}/vs/us`,
      before: null,
      after: { url: `${site.origin}/vs/us`, title: null },
    });
    expect(await check()).toEqual([]);
  });

  it("reports a removed plan page once no locale has it", async () => {
    // Gone in every locale: the German page is the same page.
    paths = paths.filter((path) => path !== "/pricing");
    expect(await check()).toEqual([]);
    paths = paths.filter((path) => path !== "/de/pricing");
    const changes = await check();
    expect(kinds(changes)).toEqual(["page_removed /pricing"]);
    // Named by its path in any locale, linked to where it was last seen.
    expect(changes[0]).toMatchObject({ before: { url: `${site.origin}/de/pricing` }, after: null });
  });

  it("reports no removals from a listing cut short by the check's budget, nor additions after", async () => {
    // robots.txt is the only request the budget allows: the sitemap is never read.
    expect(await check(visit(1))).toEqual([]);
    paths = [...paths, "/features/sso"];
    expect(kinds(await check())).toEqual(["page_added /features/sso"]);
  });

  it("reports no removals when a listing loses most of its pages at once", async () => {
    const full = paths;
    paths = ["/", "/pricing-old"];
    expect(await check()).toEqual([]);
    paths = full;
    expect(await check()).toEqual([]);
  });
});

describe("the site watch without a sitemap", () => {
  let aws: TestAws;
  let site: Site;
  let links: string[];

  beforeAll(async () => {
    [aws, site] = await Promise.all([startAws(), startSite()]);
    links = ["/pricing", "/product", "/about"];
    site.route("/robots.txt", respond("User-agent: *\nAllow: /\n", text));
    site.route("/", (_req, res) => {
      const anchors = links.map((href) => `<a href="${href}">${href}</a>`).join(" ");
      res.writeHead(200, { "content-type": "text/html" }).end(htmlPage("Acme", anchors));
    });
    site.route(
      "/product",
      respond(htmlPage("Product", `<a href="/product/analytics">Analytics</a>`)),
    );
  });

  afterAll(async () => {
    await Promise.all([aws.close(), site.close()]);
  });

  it("lists the homepage's links and those of its main sections, and reports what changes", async () => {
    const watch = new SiteWatch(aws.blobs);
    const competitor = { workspaceId: "ws_links", id: "comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8S" };
    const visit = (): Visit => ({
      session: new CheckSession(fixtureFetcher, {
        maxFetches: 10,
        deadline: Date.now() + 60_000,
        politenessMs: 0,
        requestTimeoutMs: 5_000,
        pace: new HostPace(),
      }),
      read: pageReader(),
    });
    const check = () => watch.changes(visit(), competitor, `${site.origin}/`, "2025-01-06");
    expect(await check()).toEqual([]);
    expect(site.requests).toContain("/product");
    site.route(
      "/product",
      respond(
        htmlPage("Product", `<a href="/product/analytics">A</a> <a href="/product/ai">B</a>`),
      ),
    );
    links = [...links, "/compare/us"];
    const changes = await check();
    expect(changes.map((c) => `${c.kind} ${c.subject}`).sort()).toEqual([
      "page_added /compare/us",
      "page_added /product/ai",
    ]);
  });
});
