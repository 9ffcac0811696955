import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FetchError } from "../../lib/web/errors.js";
import { extractPage } from "../../lib/web/extract.js";
import { type ResolvedAddress, SafeFetcher } from "../../lib/web/fetch.js";
import { BrowserRenderer } from "../../lib/web/render/browser.js";
import type { RenderMode } from "../../lib/web/render/renderer.js";
import { viewPage } from "../../lib/web/render/view.js";
import { CHROMIUM } from "../support/browser.js";
import { htmlPage, prose, redirect, respond, type Site, startSite } from "../support/sites.js";

/**
 * Pages rendered by the real Chromium, every request of theirs relayed through the safe fetcher.
 * The fixture site listens on loopback; only the name `shop.test` is trusted to reach it, so a
 * page sending the browser to `127.0.0.1` or to `evil.test` (a name resolving to loopback) is
 * refused as any fetch would be. One browser serves the whole file.
 */

const DNS: Record<string, ResolvedAddress[]> = {
  "shop.test": [{ address: "127.0.0.1", family: 4 }],
  "evil.test": [{ address: "127.0.0.1", family: 4 }],
};
const resolve = async (hostname: string) => {
  const found = DNS[hostname];
  if (!found) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
  return found;
};
const fetcher = new SafeFetcher({ allowPrivate: false, trustedHosts: ["shop.test"], resolve });

const js = (source: string) => respond(source, { "content-type": "text/javascript" });
const json = (value: unknown) =>
  respond(JSON.stringify(value), { "content-type": "application/json" });

/** A single-page app's shell: an empty root and its script. */
const shell = (title: string, script: string) =>
  respond(htmlPage(title, `<div id="root"></div><script src="${script}"></script>`));

const PRICING_APP = `
fetch("/api/plans").then((r) => r.json()).then((plans) => {
  document.getElementById("root").innerHTML = "<h1>Pricing</h1>" + plans.map((p) =>
    "<section><h2>" + p.name + "</h2><p>" + p.name + " costs $" + p.price +
    " per month, billed monthly, for teams that want to keep their marketing knowledge current.</p></section>"
  ).join("");
});`;

const CAREERS_APP = `
const xhr = new XMLHttpRequest();
xhr.open("GET", "/api/jobs");
xhr.onload = () => {
  const jobs = JSON.parse(xhr.responseText);
  document.getElementById("jobs").innerHTML = jobs.map((j) =>
    "<li><h3>" + j.title + "</h3><p>" + j.title + " in " + j.location +
    ", a full-time role on our team that builds the product our customers use every day.</p></li>"
  ).join("");
};
xhr.send();`;

describe("rendering pages that need scripts", () => {
  let site: Site;
  let base: string;
  let renderer: BrowserRenderer;

  /** The page at `path` as fetched, then as a browser sees it, then extracted. */
  async function read(
    path: string,
    mode: RenderMode = "auto",
    using = renderer,
    timeoutMs?: number,
  ) {
    const fetched = await fetcher.fetch(`${base}${path}`, { accept: ["html"] });
    const view = await viewPage(fetched, {
      mode,
      renderer: using,
      ...(timeoutMs ? { timeoutMs } : {}),
    });
    const page = await extractPage(view.body, view.url, { charset: view.charset });
    return { view, page };
  }

  async function failure(work: Promise<unknown>): Promise<FetchError> {
    const err = await work.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof FetchError)) throw new Error(`expected a FetchError, got ${String(err)}`);
    return err;
  }

  beforeAll(async () => {
    site = await startSite({
      "/pricing": shell("Pricing", "/pricing.js"),
      "/pricing.js": js(PRICING_APP),
      "/api/plans": json([
        { name: "Starter", price: 29 },
        { name: "Growth", price: 99 },
      ]),
      "/careers": respond(
        htmlPage(
          "Careers",
          `<h1>Careers at Shop</h1><ul id="jobs">Loading…</ul><script src="/careers.js"></script>`,
        ),
      ),
      "/careers.js": js(CAREERS_APP),
      "/api/jobs": json([
        { title: "Product Designer", location: "Berlin" },
        { title: "Backend Engineer", location: "Remote" },
      ]),
      "/article": respond(
        htmlPage("Article", `<article><h1>Article</h1>${prose("Static", 4)}</article>`),
      ),
      "/forever": shell("Forever", "/forever.js"),
      "/forever.js": js("for (;;) {}"),
      "/flood": shell("Flood", "/flood.js"),
      // A flood twenty times the bound of 50: what it proves is the bound, and a larger flood
      // only keeps Chromium busy longer, for this test and the next.
      "/flood.js": js('for (let i = 0; i < 1000; i++) fetch("/api/x?i=" + i).catch(() => {});'),
      "/hog": shell("Hog", "/hog.js"),
      "/hog.js": js("const kept = []; for (;;) kept.push(new Array(1e6).fill(Math.random()));"),
      "/to-loopback": redirect("/bounce"),
      "/leaky": shell("Leaky", "/leaky.js"),
      "/leaky.js": js(PRICING_APP),
      "/popup": respond(
        htmlPage(
          "Popup",
          `<div id="root"></div><script>window.open("http://evil.test:" + location.port + "/opened");
           new WebSocket("ws://127.0.0.1:" + location.port + "/socket");
           document.getElementById("root").innerHTML = "<h1>Popup</h1>" + ${JSON.stringify(prose("Popup"))};</script>`,
        ),
      ),
      "/walled": shell("Welcome", "/walled.js"),
      "/walled.js": js(
        'document.title = "Access Denied"; document.getElementById("root").textContent = "You don\'t have permission to access this server.";',
      ),
      "/consent-app": shell("Consent", "/consent-app.js"),
      "/consent-app.js": js(
        `document.getElementById("root").innerHTML = '<div id="onetrust-consent-sdk">We use cookies to improve your experience. Accept all cookies</div><article><h1>Consent</h1>${prose("Rendered").replaceAll("'", "\\'")}</article>';`,
      ),
    });
    base = `http://shop.test:${site.port}`;
    // A redirect inside the browser to the site's own loopback address, which is not trusted.
    site.route("/bounce", redirect(`http://127.0.0.1:${site.port}/secret`));
    site.route(
      "/leaky.js",
      js(`fetch("http://evil.test:" + location.port + "/leak").catch(() => {}); ${PRICING_APP}`),
    );
    renderer = new BrowserRenderer({
      fetcher,
      executablePath: CHROMIUM,
      // Generous enough that only the bound under test ends a hostile page.
      limits: { timeoutMs: 60_000, maxRequests: 50, maxHeapMb: 64, settleMs: 2_000 },
    });
  });
  afterAll(async () => {
    await renderer.close();
    await site.close();
  });

  it("reads a pricing page's plans and prices from the JSON its script requests", async () => {
    const { view, page } = await read("/pricing");
    expect(view.rendered).toContain("app root");
    expect(page.markdown).toContain("Starter costs $29 per month");
    expect(page.markdown).toContain("Growth costs $99 per month");
    // The document came from the fetch already: the site was asked for it once.
    expect(site.requests.filter((r) => r === "/pricing")).toHaveLength(1);
    expect(site.requests).toContain("/api/plans");
  });

  it("reads the roles a careers page loads by script", async () => {
    const { view, page } = await read("/careers");
    expect(view.rendered).toMatch(/words beside 1 scripts/);
    expect(page.markdown).toContain("Product Designer in Berlin");
    expect(page.markdown).toContain("Backend Engineer in Remote");
  });

  it("never starts a browser for a static page under auto, and always renders under always", async () => {
    const fresh = new BrowserRenderer({ fetcher, executablePath: CHROMIUM });
    try {
      const { view, page } = await read("/article", "auto", fresh);
      expect(view.rendered).toBeUndefined();
      expect(page.markdown).toContain("Static paragraph 4");
      expect(fresh.launches).toBe(0);
      const always = await read("/article", "always", fresh);
      expect(always.view.rendered).toBe("render is always");
      expect(fresh.launches).toBe(1);
    } finally {
      await fresh.close();
    }
  });

  it("never renders under never: the shell is read as sent", async () => {
    const fetched = await fetcher.fetch(`${base}/pricing`, { accept: ["html"] });
    const view = await viewPage(fetched, { mode: "never", renderer });
    expect(view.rendered).toBeUndefined();
    expect(String(view.body)).not.toContain("Starter");
  });

  it("fails a page whose script never ends at the deadline, and renders the next one", async () => {
    const err = await failure(read("/forever", "auto", renderer, 3_000));
    expect(err.code).toBe("render_timeout");
    expect(err.message).toContain("/forever did not finish rendering within 3 seconds");
    const { page } = await read("/pricing");
    expect(page.markdown).toContain("Starter costs $29");
  });

  it("fails a page that makes 1,000 requests at the request bound", {
    timeout: 90_000,
  }, async () => {
    const err = await failure(read("/flood"));
    expect(err.code).toBe("too_many_requests");
    expect(err.message).toContain("more than 50 requests");
    // The relay stopped at the bound: the site saw at most that many of them.
    expect(site.requests.filter((r) => r.startsWith("/api/x")).length).toBeLessThanOrEqual(50);
    expect((await read("/careers")).page.markdown).toContain("Product Designer");
  });

  it("fails a page whose script eats memory when its renderer crashes, and renders the next one", async () => {
    const err = await failure(read("/hog"));
    expect(err.code).toBe("render_failed");
    expect(err.message).toContain("crashed");
    expect((await read("/pricing")).page.markdown).toContain("Growth costs $99");
  });

  it("refuses a redirect to a loopback address made inside the browser", async () => {
    const err = await failure(
      renderer.render({ url: `${base}/to-loopback` }).then(() => undefined),
    );
    expect(err.code).toBe("blocked_address");
    expect(site.requests).not.toContain("/secret");
  });

  it("refuses a script's request to a name that resolves to a private address, and renders the rest", async () => {
    const { page } = await read("/leaky");
    expect(page.markdown).toContain("Starter costs $29");
    expect(site.requests).not.toContain("/leak");
  });

  it("closes popups and WebSockets without a request reaching them", async () => {
    const { page } = await read("/popup");
    expect(page.markdown).toContain("Popup paragraph 1");
    expect(site.requests).not.toContain("/opened");
    expect(site.requests).not.toContain("/socket");
  });

  it("fails a page that renders into a wall as blocked", async () => {
    const err = await failure(read("/walled"));
    expect(err.code).toBe("blocked");
    expect(err.message).toContain("once rendered, shows an “Access denied” page");
  });

  it("removes a consent overlay a script adds before the DOM is taken", async () => {
    const { view, page } = await read("/consent-app");
    expect(String(view.body)).not.toContain("We use cookies");
    expect(page.markdown).toContain("Rendered paragraph 1");
  });

  it("takes a bounded JPEG screenshot when asked", async () => {
    const fetched = await fetcher.fetch(`${base}/pricing`, { accept: ["html"] });
    const view = await viewPage(fetched, { mode: "auto", renderer, screenshot: true });
    const shot = view.screenshot as Buffer;
    expect(shot.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    expect(shot.byteLength).toBeLessThanOrEqual(600 * 1024);
  });

  it("fails a page that needs scripts with needs_browser where no browser is", async () => {
    const fetched = await fetcher.fetch(`${base}/pricing`, { accept: ["html"] });
    const err = await failure(viewPage(fetched, { mode: "auto", renderer: undefined }));
    expect(err.code).toBe("needs_browser");
    expect(err.message).toContain("app root (#root) is empty");
    const missing = new BrowserRenderer({ fetcher, executablePath: "/nonexistent/chromium" });
    expect((await failure(missing.render({ url: `${base}/pricing` }))).code).toBe("needs_browser");
  });
});
