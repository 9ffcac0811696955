import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FetchError } from "../../lib/web/errors.js";
import { extractPage } from "../../lib/web/extract.js";
import { type FetchOptions, SafeFetcher } from "../../lib/web/fetch.js";
import { blockedBy, needsScripts } from "../../lib/web/render/detect.js";
import { profilePage } from "../../lib/web/render/profile.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/** Which pages need scripts, which are walls, and banners that never reach the text. */

const needs = (html: string) => needsScripts(profilePage(html));
const wall = (html: string, header?: string) => blockedBy(profilePage(html), header);
const article = (title: string, extra = "") =>
  htmlPage(title, `<article><h1>${title}</h1>${prose(title, 6)}</article>${extra}`);

describe("needsScripts", () => {
  it("leaves a page with its text in the HTML alone, scripts or not", () => {
    expect(needs(article("Docs", '<script src="/analytics.js"></script>'))).toBeUndefined();
    // An app root that the server filled in (server-side rendering) is not empty.
    const ssr = `<div id="root">${prose("Rendered on the server", 2)}</div><script src="/a.js"></script>`;
    expect(needs(htmlPage("SSR", ssr))).toBeUndefined();
  });

  it("names why a page needs scripts", () => {
    expect(needs(htmlPage("App", '<div id="root"></div>'))).toBe("its app root (#root) is empty");
    expect(needs(htmlPage("Next", "<div id='__next'>  </div>"))).toBe(
      "its app root (#__next) is empty",
    );
    expect(
      needs(htmlPage("App", "<noscript>You need to enable JavaScript to run this app.</noscript>")),
    ).toBe("its <noscript> asks for JavaScript");
    expect(needs(htmlPage("Jobs", '<h1>Jobs</h1><script src="/jobs.js"></script>'))).toBe(
      "it shows 2 words beside 1 scripts",
    );
    const bundle = `<script>${"var x=1;".repeat(7000)}</script>`;
    expect(needs(htmlPage("Big", `${prose("Short", 1)}${prose("More", 1)}${bundle}`))).toBe(
      "it shows 57 words beside 56 KB of script",
    );
  });

  it("counts neither script, style nor JSON data as text, nor data blocks as scripts", () => {
    const profile = profilePage(
      htmlPage(
        "T",
        `<script type="application/ld+json">{"a": "many words here"}</script><style>p { color: red }</style><p>two words</p>`,
      ),
    );
    expect(profile).toMatchObject({ words: 3, scripts: 0 });
  });
});

describe("blockedBy", () => {
  it("recognises challenge, captcha, block and login pages", () => {
    expect(wall(htmlPage("Just a moment...", "<p>Checking your connection</p>"))).toBe(
      "a Cloudflare challenge (“Just a moment…”)",
    );
    expect(wall("", "challenge")).toBe("a Cloudflare challenge");
    expect(
      wall(htmlPage("Access Denied", "You don't have permission to access this server.")),
    ).toBe("an “Access denied” page");
    expect(
      wall(htmlPage("Shop", '<iframe src="https://geo.captcha-delivery.com/c"></iframe>')),
    ).toBe("a DataDome captcha");
    expect(wall(htmlPage("Shop", '<div class="h-captcha"></div>'))).toBe("a captcha");
    expect(wall(htmlPage("Log in", '<input type="password">'))).toBe("a login wall");
  });

  it("never calls a page with content a wall for the widget or words it carries", () => {
    expect(wall(article("Contact", '<div class="g-recaptcha"></div>'))).toBeUndefined();
    expect(wall(article("Access denied errors explained"))).toBeUndefined();
    expect(wall(article("Log in", '<input type="password">'))).toBeUndefined();
    expect(wall(htmlPage("Log in", "<p>Our login page moved.</p>"))).toBeUndefined();
  });
});

describe("walls on the wire", () => {
  let site: Site;
  const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 2000 });
  const forbidden = htmlPage("Forbidden", "<p>Forbidden</p>");

  beforeAll(async () => {
    site = await startSite({
      "/challenged": respond(
        forbidden,
        { "content-type": "text/html", "cf-mitigated": "challenge" },
        403,
      ),
      "/forbidden": respond(forbidden, { "content-type": "text/html" }, 403),
      "/robots.txt": respond(
        htmlPage("Just a moment...", ""),
        { "content-type": "text/html" },
        403,
      ),
    });
  });
  afterAll(() => site.close());

  async function errorOf(url: string, accept: FetchOptions) {
    const err = await fetcher.fetch(url, accept).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof FetchError)) throw new Error(`expected a FetchError, got ${String(err)}`);
    return err;
  }

  it("fails a page behind a challenge as blocked, and a plain refusal as the status it is", async () => {
    const challenged = await errorOf(`${site.origin}/challenged`, { accept: ["html"] });
    expect(challenged).toMatchObject({ code: "blocked", status: 403 });
    expect(challenged.message).toContain("answered HTTP 403 with a Cloudflare challenge");
    expect(await errorOf(`${site.origin}/forbidden`, { accept: ["html"] })).toMatchObject({
      code: "http_error",
      status: 403,
    });
  });

  it("leaves the statuses of what is not a page as they are (robots.txt reads 4xx as allow-all)", async () => {
    expect(await errorOf(`${site.origin}/robots.txt`, { accept: ["text"] })).toMatchObject({
      code: "http_error",
    });
  });
});

describe("cookie-consent overlays", () => {
  it("never reach the extracted text", async () => {
    const page = await extractPage(
      article(
        "Pricing",
        `<div id="onetrust-consent-sdk"><p>We value your privacy. We use cookies to enhance your browsing experience.</p></div>
         <div class="cookie-banner"><p>This site uses cookies. Accept all cookies</p></div>`,
      ),
      "https://shop.example/pricing",
    );
    expect(page.markdown).toContain("Pricing paragraph 6");
    expect(page.markdown).not.toMatch(/cookies/i);
  });

  it("leave a cookie policy that is the page's content alone", async () => {
    const policy = htmlPage(
      "Cookie policy",
      `<main class="cookie-policy"><h1>Cookie policy</h1>${prose("Which cookies we set and why", 12)}</main>`,
    );
    const page = await extractPage(policy, "https://shop.example/cookies");
    expect(page.markdown).toContain("Which cookies we set and why paragraph 12");
  });
});
