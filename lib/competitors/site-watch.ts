import { logger } from "../log.js";
import type { Blobs } from "../store/blobs.js";
import { readSitemaps, type SitemapLimits } from "../web/sitemap.js";
import { withoutTrailingSlashes } from "../web/url.js";
import type { Change } from "./diff.js";
import { contentKey } from "./extract/content.js";
import type { Visit } from "./observe.js";
import { competitorBlobPrefix } from "./snapshot.js";

/**
 * The site-wide watch: each check lists the competitor's pages that matter (pricing, product,
 * features, comparisons, careers, blog) from its sitemaps, or from its homepage and main section
 * pages when it has none, and compares them with the last list: a new `/vs/<us>` page or a removed
 * plan page becomes a `page_added` or `page_removed` change. Noise never reaches the list:
 * pagination, tag, category, author and date archives, feeds, files, and the same page in another
 * locale. The reading spends the check's own budget of requests and time, after the sections.
 */

/** The parts of a site worth watching, by the first segment of a page's path. */
const AREAS: Array<[area: string, segment: RegExp]> = [
  ["pricing", /^(?:pricing|plans|prices|plans-and-pricing)$/],
  ["product", /^(?:products?|platform|solutions?|integrations?|use-cases)$/],
  ["features", /^features?$/],
  ["compare", /^(?:compare|comparisons?|vs|versus|alternatives?)$|^vs-|-vs-|-alternatives?$/],
  ["careers", /^(?:careers?|jobs|join-us|hiring)$/],
  ["blog", /^(?:blog|news|newsroom|press|updates|changelog)$/],
];

/** A locale prefix (`/de/`, `/en-gb/`, `/pt_BR/`): the same page in another language. */
const LOCALE =
  /^(?:en|de|fr|es|it|pt|nl|sv|da|no|nb|fi|pl|cs|sk|ru|uk|tr|ja|ko|zh|ar|he|hi|id|th|vi|ro|hu|el|bg)(?:[-_][a-z]{2,4})?$/i;

/** Listings and archives rather than pages: they come and go as content is added. */
const LISTING =
  /^(?:tags?|categor(?:y|ies)|authors?|topics?|archives?|labels?|page|feed|rss|atom|amp)$/i;
/** A year or month archive (`/blog/2024/05`), as the last segments of a path. */
const DATE_ARCHIVE = /^\d{4}$|^\d{1,2}$/;
/** Anything that is a file rather than a page. */
const FILE = /\.(?!html?$|php$|aspx?$)[a-z0-9]{1,5}$/i;

/** Pages kept in a list at most; the rest of a huge site goes unwatched. */
const MAX_PAGES = 2_000;
/** Sitemap files and entries read per check. */
const SITEMAP_LIMITS: SitemapLimits = { maxUrls: 10_000, maxFiles: 4, maxDepth: 2 };
/** Without a sitemap: the homepage, then this many of the main section pages it links to. */
const SECTION_PAGES = 3;
/**
 * A list that lost more than half its pages at once is more likely a sitemap cut short or
 * restructured than half a site removed: no page is reported removed from it.
 */
const MIN_KEPT_FRACTION = 0.5;

export interface WatchedPage {
  /** Identity: host without `www.`, path without locale, trailing slash or case. */
  key: string;
  /** The path in that identity: what events name the page by, whatever its locale. */
  path: string;
  url: string;
  area: string;
}

/** The pages read in one check, and whether every file or page that lists them was read. */
export interface SiteReading {
  source: "sitemap" | "links";
  pages: WatchedPage[];
  complete: boolean;
}

/** The list kept between checks, beside the competitor's snapshots. */
interface SitePagesRecord extends SiteReading {
  readAt: string;
}

const bare = (host: string) => host.toLowerCase().replace(/^www\./, "");

/** The page as the watch keeps it, or undefined when it is off-site, noise or in no area. */
export function watchedPage(url: string, home: string): WatchedPage | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const site = new URL(home);
  if (!/^https?:$/.test(u.protocol) || bare(u.hostname) !== bare(site.hostname)) return undefined;
  const segments = withoutTrailingSlashes(u.pathname).toLowerCase().split("/").filter(Boolean);
  if (segments[0] && segments[0] !== "vs" && LOCALE.test(segments[0])) segments.shift();
  const [first] = segments;
  const area = first && AREAS.find(([, segment]) => segment.test(first))?.[0];
  if (!area) return undefined;
  const last = segments.at(-1) ?? "";
  if (segments.some((s) => LISTING.test(s)) || FILE.test(last)) return undefined;
  if (segments.length > 1 && DATE_ARCHIVE.test(last)) return undefined;
  const path = `/${segments.join("/")}`;
  return { key: `${bare(u.hostname)}${path}`, path, url: `${u.origin}${u.pathname}`, area };
}

/** Each watched page once, the first URL seen for it, at most MAX_PAGES. */
function watched(urls: string[], home: string): WatchedPage[] {
  const pages = new Map<string, WatchedPage>();
  for (const url of urls) {
    const page = watchedPage(url, home);
    if (page && !pages.has(page.key)) pages.set(page.key, page);
    if (pages.size >= MAX_PAGES) break;
  }
  return [...pages.values()];
}

/** A request that did not come to an answer, as opposed to a file the site does not have. */
const cutShort = (reason: string) => reason === "budget" || reason === "network";

async function fromSitemaps(visit: Visit, home: string): Promise<SiteReading | undefined> {
  const origin = new URL(home).origin;
  const named = await visit.session.sitemaps(origin);
  let complete = true;
  const urls = await readSitemaps(
    named.length > 0 ? named : [`${origin}/sitemap.xml`],
    async (url) => {
      const outcome = await visit.session.get(url, "feed");
      if (outcome.ok) return outcome.page.text;
      if (cutShort(outcome.reason)) complete = false;
      return undefined;
    },
    SITEMAP_LIMITS,
  );
  if (urls.length === 0) return undefined;
  return { source: "sitemap", pages: watched(urls, home), complete };
}

/** The links of a page (read in the sandbox), or why there are none. */
async function linksOn(visit: Visit, url: string): Promise<string[] | "cut short" | undefined> {
  const outcome = await visit.session.get(url, "html");
  if (!outcome.ok) return cutShort(outcome.reason) ? "cut short" : undefined;
  try {
    return (await visit.read("links", outcome.page.url, outcome.page.text)).links;
  } catch {
    return "cut short";
  }
}

/** Without a sitemap: the homepage's links, and those of its first few main section pages. */
async function fromLinks(visit: Visit, home: string): Promise<SiteReading | undefined> {
  const first = await linksOn(visit, home);
  if (!Array.isArray(first)) return undefined;
  const urls = [...first];
  let complete = true;
  const sections = watched(first, home).filter((page) => page.key.split("/").length === 2);
  for (const section of sections.slice(0, SECTION_PAGES)) {
    const links = await linksOn(visit, section.url);
    if (links === "cut short") complete = false;
    else if (links) urls.push(...links);
  }
  return { source: "links", pages: watched(urls, home), complete };
}

/** What changed from one list to the next: pages added, and pages removed when it can tell. */
export function diffSitePages(before: SiteReading, after: SiteReading): Change[] {
  // Lists read in different ways do not compare: the new one is a baseline.
  if (before.source !== after.source) return [];
  const old = new Map(before.pages.map((page) => [page.key, page]));
  const now = new Map(after.pages.map((page) => [page.key, page]));
  const changes: Change[] = [];
  for (const [key, page] of now) {
    if (old.has(key)) continue;
    changes.push({
      type: "content",
      kind: "page_added",
      subject: page.path,
      url: page.url,
      before: null,
      after: { url: page.url, title: null },
    });
  }
  if (!removalsTrusted(before, after)) return changes;
  for (const [key, page] of old) {
    if (now.has(key)) continue;
    changes.push({
      type: "content",
      kind: "page_removed",
      subject: page.path,
      url: page.url,
      before: { url: page.url, title: null },
      after: null,
    });
  }
  return changes;
}

/**
 * The changes of a check without the new pages that are posts it reports as `post_published`:
 * the post's event already tells the news, with its title and date, and a second one for its page
 * would only repeat it. Blog pages that are no post in the feed (a new press page, say) stay.
 */
export function withoutPostPages(changes: Change[]): Change[] {
  const posts = new Set(
    changes.flatMap((c) => (c.kind === "post_published" ? [contentKey(c.after.url)] : [])),
  );
  return changes.filter((c) => c.kind !== "page_added" || !posts.has(contentKey(c.after.url)));
}

/** Only two lists read in full, the new one not much shorter, tell that a page is gone. */
const removalsTrusted = (before: SiteReading, after: SiteReading) =>
  before.complete &&
  after.complete &&
  after.pages.length >= before.pages.length * MIN_KEPT_FRACTION;

/**
 * The list to keep: the new one when its removals are trusted; otherwise the old one with the new
 * pages added, so pages a short reading missed are not reported added when the next one sees them.
 */
function kept(before: SiteReading | undefined, after: SiteReading): SiteReading {
  if (!before || before.source !== after.source || removalsTrusted(before, after)) return after;
  const keys = new Set(after.pages.map((page) => page.key));
  const pages = [...after.pages, ...before.pages.filter((page) => !keys.has(page.key))];
  return { source: after.source, pages: pages.slice(0, MAX_PAGES), complete: before.complete };
}

const sameList = (a: SiteReading, b: SiteReading) =>
  a.source === b.source &&
  a.complete === b.complete &&
  a.pages.length === b.pages.length &&
  a.pages.every((page, i) => page.key === b.pages[i]?.key);

/** Reads and compares a competitor's list of pages, kept in the bucket between checks. */
export class SiteWatch {
  constructor(private readonly blobs: Blobs) {}

  /**
   * The pages added to and removed from the site since the last check; none on the first, which
   * is the baseline, or when the site could not be listed. Never throws: a failure costs the
   * watch, not the check.
   */
  async changes(
    visit: Visit,
    competitor: { workspaceId: string; id: string },
    homepage: string,
    readAt: string,
  ): Promise<Change[]> {
    try {
      const reading = (await fromSitemaps(visit, homepage)) ?? (await fromLinks(visit, homepage));
      if (!reading) return [];
      const key = `${competitorBlobPrefix(competitor.workspaceId, competitor.id)}watched-pages.json`;
      const before = await this.blobs.getJson<SitePagesRecord>(key);
      const changes = before ? diffSitePages(before, reading) : [];
      const next = kept(before, reading);
      if (!before || !sameList(before, next)) {
        await this.blobs.putJson(key, { ...next, readAt } satisfies SitePagesRecord);
      }
      return changes;
    } catch (err) {
      logger.warn("site watch failed; the check goes on without it", {
        ...competitor,
        error: err,
      });
      return [];
    }
  }
}
