import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExtractionError, extractPage } from "../../lib/web/extract.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";

const URL_ = "https://example.com/docs/guide";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof ExtractionError) return err.code;
    throw err;
  }
}

describe("extractPage", () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(() => site.close());

  it("keeps the title and heading structure as Markdown, without link targets or images", () => {
    const page = extractPage(
      htmlPage(
        "Pricing guide",
        `<nav><a href="/">Home</a></nav><article><h1>Pricing guide</h1>${prose("Intro")}
         <h2>Plans</h2>${prose("Plans")}<p>See <a href="/plans">all plans</a>.</p>
         <img src="/chart.png" alt="chart"><h3>Enterprise</h3>${prose("Enterprise", 1)}</article>`,
      ),
      URL_,
    );
    expect(page.title).toBe("Pricing guide");
    expect(page.markdown.startsWith("# Pricing guide\n\n")).toBe(true);
    expect(page.markdown).toMatch(/^## Plans$/m);
    expect(page.markdown).toMatch(/^### Enterprise$/m);
    expect(page.markdown).toContain("See all plans.");
    expect(page.markdown).not.toContain("](");
    expect(page.markdown).not.toContain("chart.png");
  });

  it("runs no script and loads no subresource", async () => {
    const page = extractPage(
      htmlPage(
        "Static",
        `<script>document.body.innerHTML = "<p>replaced by a script</p>"</script>
         <script src="${site.origin}/app.js"></script>
         <img src="${site.origin}/pixel.gif"><iframe src="${site.origin}/frame"></iframe>
         <article>${prose("Static")}</article>`,
        `<link rel="stylesheet" href="${site.origin}/style.css">`,
      ),
      URL_,
    );
    expect(page.markdown).toContain("Static paragraph 1");
    expect(page.markdown).not.toContain("replaced by a script");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(site.requests).toEqual([]);
  });

  it("reports absolute, canonical, followable links once each, and rel=canonical", () => {
    const page = extractPage(
      htmlPage(
        "Links",
        `<article>${prose("Links")}</article>
         <a href="intro">Intro</a><a href="/intro/?utm_source=nav#top">Intro again</a>
         <a href="https://other.example/x?b=1&a=2">Other</a><a href="mailto:a@b.c">Mail</a>
         <a href="javascript:void(0)">JS</a><a href="/paid" rel="sponsored nofollow">Paid</a>
         <map><area href="/area"></map>`,
        `<link rel="canonical" href="/docs/guide/?ref=x"><base href="https://example.com/docs/">`,
      ),
      URL_,
    );
    expect(page.links).toEqual([
      "https://example.com/docs/intro",
      "https://example.com/intro",
      "https://other.example/x?a=2&b=1",
      "https://example.com/area",
    ]);
    expect(page.canonical).toBe("https://example.com/docs/guide");
    expect(page).toMatchObject({ index: true, follow: true });
  });

  it("honours meta robots noindex and nofollow", () => {
    const page = extractPage(
      htmlPage(
        "Hidden",
        `<article>${prose("Hidden")}</article><a href="/x">x</a>`,
        `<meta name="robots" content="noindex, nofollow">`,
      ),
      URL_,
    );
    expect(page).toMatchObject({ index: false, follow: false, links: [] });
  });

  it("decodes the page in its declared or sniffed charset", () => {
    const latin1 = Buffer.from(
      htmlPage("Caf\xe9", `<article>${prose("Caf\xe9 cr\xe8me")}</article>`).replace(
        '<meta charset="utf-8">',
        '<meta charset="iso-8859-1">',
      ),
      "latin1",
    );
    expect(extractPage(latin1, URL_).title).toBe("Café");
    expect(extractPage(latin1, URL_, { charset: "windows-1252" }).markdown).toContain("crème");
  });

  it("refuses pages that are too large or have too many elements", () => {
    const big = htmlPage("Big", prose("Big", 200));
    expect(codeOf(() => extractPage(big, URL_, { limits: { maxBytes: 10_000 } }))).toBe(
      "too_large",
    );
    const deep = htmlPage("Deep", "<div>".repeat(5000) + prose("Deep"));
    expect(codeOf(() => extractPage(deep, URL_, { limits: { maxElements: 1000 } }))).toBe(
      "too_complex",
    );
  });

  it("fails clearly on a page with no readable text", () => {
    for (const html of [
      htmlPage("App", '<div id="root"></div><script src="/bundle.js"></script>'),
      htmlPage("Shell", "<noscript>You need to enable JavaScript to run this app.</noscript>"),
      htmlPage("Nothing", ""),
      "",
    ]) {
      expect(codeOf(() => extractPage(html, URL_))).toBe("empty_content");
    }
  });
});
