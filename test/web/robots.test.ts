import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { RobotsCache, type RobotsFetch } from "../../lib/web/robots.js";
import { respond, type Site, startSite } from "../support/sites.js";

const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 2000 });
const fetch: RobotsFetch = (url, options) => fetcher.fetch(url, options);
const text = { "content-type": "text/plain" };

describe("RobotsCache", () => {
  let site: Site;
  let missing: Site;
  let failing: Site;
  let hostile: Site;

  beforeAll(async () => {
    site = await startSite({
      "/robots.txt": respond(
        [
          "User-agent: *",
          "Disallow: /private/",
          "",
          "User-agent: kb-intel-bot",
          "Disallow: /private/",
          "Disallow: /drafts",
          "Crawl-delay: 2",
          "",
          "Sitemap: https://example.com/sitemap-index.xml",
        ].join("\n"),
        text,
      ),
    });
    missing = await startSite();
    failing = await startSite({ "/robots.txt": respond("down", text, 503) });
    // Four 100 KB wildcard rules (under the 500 KiB cap), a long rule cheap to check, and one
    // ordinary rule.
    const longRule = `Disallow: /${"*a".repeat(50_000)}`;
    const cheapLongRule = `Disallow: /long/${"l".repeat(3000)}`;
    hostile = await startSite({
      "/robots.txt": respond(
        [
          "User-agent: *",
          longRule,
          longRule,
          longRule,
          longRule,
          cheapLongRule,
          "Disallow: /drafts",
        ].join("\n"),
        text,
      ),
    });
  });
  afterAll(() => Promise.all([site.close(), missing.close(), failing.close(), hostile.close()]));

  it("applies the group of our agent, with its crawl delay and the sitemaps", async () => {
    const robots = new RobotsCache(fetch);
    const rules = await robots.rules(`${site.origin}/any/page`);
    expect(rules.isAllowed(`${site.origin}/docs/a`)).toBe(true);
    expect(rules.isAllowed(`${site.origin}/private/a`)).toBe(false);
    expect(rules.isAllowed(`${site.origin}/drafts/b`)).toBe(false);
    expect(rules.crawlDelayMs).toBe(2000);
    expect(rules.sitemaps).toEqual(["https://example.com/sitemap-index.xml"]);
  });

  it("fetches a host's file once while it is fresh, and again when it expires", async () => {
    let now = 1000;
    const robots = new RobotsCache(fetch, { ttlMs: 1000, now: () => now });
    const before = site.requests.length;
    await Promise.all([robots.rules(`${site.origin}/a`), robots.rules(`${site.origin}/b`)]);
    await robots.rules(`${site.origin}/c`);
    expect(site.requests.length - before).toBe(1);
    now = 6000;
    await robots.rules(`${site.origin}/d`);
    expect(site.requests.length - before).toBe(2);
  });

  it("allows everything when there is no file, and nothing when the server fails", async () => {
    const robots = new RobotsCache(fetch);
    expect((await robots.rules(missing.origin)).isAllowed(`${missing.origin}/x`)).toBe(true);
    const failed = await robots.rules(failing.origin);
    expect(failed.isAllowed(`${failing.origin}/x`)).toBe(false);
    expect(failed.unreadable).toMatchObject({ code: "http_error", status: 503 });
  });

  it("drops rules too long to matter, so checking a URL stays cheap", async () => {
    const rules = await new RobotsCache(fetch).rules(`${hostile.origin}/`);
    expect(rules.isAllowed(`${hostile.origin}/drafts/x`)).toBe(false);
    // Kept, the four wildcard rules cost ~7 ms each per URL of 1 KB (100 such links, ~3 s). What
    // they, and the long cheap one, would refuse is allowed: they are gone, which no machine's
    // speed changes. (Kept, the wildcard ones would take half a minute to refuse the second URL.)
    expect(rules.isAllowed(`${hostile.origin}/long/${"l".repeat(3000)}`)).toBe(true);
    expect(rules.isAllowed(`${hostile.origin}/${"a".repeat(50_000)}`)).toBe(true);
  });
});
