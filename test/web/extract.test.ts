import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryBudget } from "../../lib/files/budget.js";
import { Sandbox } from "../../lib/files/sandbox.js";
import { extractPage } from "../../lib/web/extract.js";
import { ExtractionError } from "../../lib/web/page.js";
import { endlessSandbox, NEVER_ENDS } from "../support/endless.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

const URL_ = "https://example.com/docs/guide";

/** The code of the ExtractionError a page is refused with; undefined when it is read. */
async function codeOf(extraction: Promise<unknown>): Promise<string | undefined> {
  try {
    await extraction;
    return undefined;
  } catch (err) {
    if (err instanceof ExtractionError) return err.code;
    throw err;
  }
}

describe("extractPage", () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite({ "/ping": respond("pong", { "content-type": "text/plain" }) });
  });
  afterAll(() => site.close());

  it("keeps the title and heading structure as Markdown, without link targets or images", async () => {
    const page = await extractPage(
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
    const page = await extractPage(
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

  it("reports absolute, canonical, followable links once each, and rel=canonical", async () => {
    const page = await extractPage(
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

  it("honours meta robots noindex and nofollow", async () => {
    const page = await extractPage(
      htmlPage(
        "Hidden",
        `<article>${prose("Hidden")}</article><a href="/x">x</a>`,
        `<meta name="robots" content="noindex, nofollow">`,
      ),
      URL_,
    );
    expect(page).toMatchObject({ index: false, follow: false, links: [] });
  });

  it("decodes the page in its declared or sniffed charset", async () => {
    const latin1 = Buffer.from(
      htmlPage("Caf\xe9", `<article>${prose("Caf\xe9 cr\xe8me")}</article>`).replace(
        '<meta charset="utf-8">',
        '<meta charset="iso-8859-1">',
      ),
      "latin1",
    );
    expect((await extractPage(latin1, URL_)).title).toBe("Café");
    const declared = await extractPage(latin1, URL_, { charset: "windows-1252" });
    expect(declared.markdown).toContain("crème");
  });

  it("refuses pages too large, with too many elements or nested too deep, before reading them", async () => {
    // A page that reached a thread would fail with this sandbox's error, not a refusal.
    const broken = new URL("data:text/javascript,throw new Error('no thread expected')");
    const sandbox = new Sandbox(new MemoryBudget(1024), { url: broken });
    const refusal = async (html: string, limits = {}) => {
      const extraction = extractPage(html, URL_, { sandbox, limits });
      await expect(extraction).rejects.toBeInstanceOf(ExtractionError);
      return extraction.catch((err: ExtractionError) => `${err.code}: ${err.message}`);
    };
    expect(await refusal(htmlPage("Big", prose("Big", 200)), { maxBytes: 10_000 })).toBe(
      "too_large: The page is larger than 10000 bytes",
    );
    expect(await refusal(htmlPage("Flat", "<p>x</p>".repeat(1001)), { maxElements: 1000 })).toBe(
      "too_complex: The page has more than 1000 elements",
    );
    const deep = htmlPage("Deep", "<div>".repeat(5000) + prose("Deep"));
    expect(await refusal(deep)).toBe(
      "too_complex: The page nests elements more than 256 levels deep",
    );
    // Just within the depth limit, a page is read.
    const nested = htmlPage(
      "Nested",
      `${"<div>".repeat(250)}<article>${prose("Nested")}</article>`,
    );
    expect((await extractPage(nested, URL_)).markdown).toContain("Nested paragraph 1");
  });

  it("ends a read that outlives its deadline while this thread goes on answering", async () => {
    // A page no thread ever finishes reading (test/support/endless.ts), on a fast machine or a
    // loaded one: only the deadline ends it.
    const sandbox = endlessSandbox(new MemoryBudget(1024));
    const slow = htmlPage("Slow", `<article>${prose("Slow")}${NEVER_ENDS}</article>`);
    let settled = false;
    const extraction = extractPage(slow, URL_, { sandbox, limits: { timeoutMs: 1_000 } });
    const outcome = codeOf(extraction).finally(() => {
      settled = true;
    });
    // Answered while the read was still running: at least the deadline's second.
    let answered = 0;
    while (!settled) {
      const res = await fetch(`${site.origin}/ping`);
      if ((await res.text()) === "pong" && !settled) answered++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await outcome).toBe("timeout");
    await expect(extraction).rejects.toThrow("Reading the page took longer than 1 seconds");
    expect(answered).toBeGreaterThan(3);
  });

  it("fails a page that needs more memory than its thread may use, as too complex", async () => {
    const heavy = htmlPage("Heavy", `<article><p>${"<b>x</b>".repeat(55_000)}</p></article>`);
    const extraction = extractPage(heavy, URL_, { limits: { maxHeapMb: 56, timeoutMs: 60_000 } });
    await expect(extraction).rejects.toMatchObject({
      code: "too_complex",
      message: "Reading the page needed more than 56 MB of memory",
    });
  });

  it("fails clearly on a page with no readable text", async () => {
    for (const html of [
      htmlPage("App", '<div id="root"></div><script src="/bundle.js"></script>'),
      htmlPage("Shell", "<noscript>You need to enable JavaScript to run this app.</noscript>"),
      htmlPage("Nothing", ""),
      "",
    ]) {
      expect(await codeOf(extractPage(html, URL_))).toBe("empty_content");
    }
  });
});
