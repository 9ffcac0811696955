import { ExtractionError } from "../web/page.js";
import { discoverPages, type PageCandidates } from "./discover.js";
import { type AtsApis, boardApiUrl, findBoards, parseBoard } from "./extract/ats.js";
import {
  extractPosts,
  feedLinks,
  parseFeed,
  parseSitemap,
  postsFromSitemap,
} from "./extract/content.js";
import { type HtmlPage, loadHtml } from "./extract/html.js";
import { extractJobs } from "./extract/jobs.js";
import { extractMessaging } from "./extract/messaging.js";
import { extractPlans } from "./extract/pricing.js";
import type { CrawlSession } from "./session.js";
import type { Facts } from "./snapshot.js";

export type Observation =
  | { ok: true; homepage: string; facts: Facts }
  | { ok: false; reason: string };

/** Candidate pages tried per kind before giving up on it: linked pages first, then guesses. */
const ATTEMPTS_PER_KIND = 2;
/** Child sitemaps of a sitemap index read when looking for posts. */
const CHILD_SITEMAPS = 2;

const isHtml = (contentType: string) => /html/.test(contentType) || contentType === "";

/** A fetched page, parsed, or why it cannot be read. */
function parsePage(url: string, text: string): HtmlPage | { reason: string } {
  try {
    return loadHtml(url, text);
  } catch (err) {
    if (err instanceof ExtractionError) return { reason: `${url}: ${err.message}` };
    throw err;
  }
}

async function fetchHtml(session: CrawlSession, url: string): Promise<HtmlPage | undefined> {
  const outcome = await session.get(url, "html");
  if (!outcome.ok || !isHtml(outcome.page.contentType)) return undefined;
  const page = parsePage(outcome.page.url, outcome.page.text);
  return "reason" in page ? undefined : page;
}

/** The first candidate page from which `read` gets something, trying a few at most. */
async function firstPage<T>(
  session: CrawlSession,
  urls: string[],
  read: (page: HtmlPage) => T | undefined | Promise<T | undefined>,
): Promise<T | undefined> {
  for (const url of urls.slice(0, ATTEMPTS_PER_KIND)) {
    const page = await fetchHtml(session, url);
    const found = page && (await read(page));
    if (found) return found;
  }
  return undefined;
}

async function readPricing(session: CrawlSession, urls: string[]): Promise<Facts["pricing"]> {
  return firstPage(session, urls, (page) => {
    const plans = extractPlans(page);
    return plans.length > 0 ? { url: page.url, plans } : undefined;
  });
}

/** Jobs from the first ATS board a page embeds, through the vendor's public JSON API. */
async function readBoard(
  session: CrawlSession,
  page: HtmlPage,
  apis: AtsApis,
): Promise<Facts["hiring"]> {
  const [board] = findBoards(page.raw);
  if (!board) return undefined;
  const outcome = await session.get(boardApiUrl(board, apis), "json", { robots: false });
  if (!outcome.ok) return undefined;
  try {
    const jobs = parseBoard(board.vendor, JSON.parse(outcome.page.text));
    return { url: page.url, source: board.vendor, jobs };
  } catch {
    return undefined;
  }
}

/** An ATS board answers even with no openings; a careers page with none found proves nothing. */
async function readHiring(
  session: CrawlSession,
  home: HtmlPage,
  urls: string[],
  apis: AtsApis,
): Promise<Facts["hiring"]> {
  return (
    (await readBoard(session, home, apis)) ??
    firstPage(session, urls, async (page) => {
      const board = await readBoard(session, page, apis);
      if (board) return board;
      const jobs = extractJobs(page);
      return jobs.length > 0 ? { url: page.url, source: "page" as const, jobs } : undefined;
    })
  );
}

async function readFeed(session: CrawlSession, urls: string[]): Promise<Facts["content"]> {
  for (const url of urls.slice(0, ATTEMPTS_PER_KIND)) {
    const outcome = await session.get(url, "feed");
    if (!outcome.ok) continue;
    const items = parseFeed(outcome.page.text, outcome.page.url);
    if (items && items.length > 0) return { url: outcome.page.url, items };
  }
  return undefined;
}

/** Posts from the sitemaps robots.txt names (or `/sitemap.xml`), one index level deep. */
async function readSitemap(
  session: CrawlSession,
  home: HtmlPage,
  blogUrl: string,
): Promise<Facts["content"]> {
  const origin = new URL(home.url).origin;
  const named = await session.sitemaps(origin);
  const queue = named.length > 0 ? named.slice(0, 1) : [`${origin}/sitemap.xml`];
  const pages: Array<{ url: string; lastmod: string | null }> = [];
  // The queue grows while read: an index's children are read after it.
  for (const [i, url] of queue.entries()) {
    if (i > CHILD_SITEMAPS) break;
    const outcome = await session.get(url, "feed");
    const entries = outcome.ok ? parseSitemap(outcome.page.text) : undefined;
    if (!entries) continue;
    pages.push(...entries.pages);
    // Child sitemaps named for posts first: `post-sitemap.xml`, `blog-sitemap.xml`.
    const children = [...entries.sitemaps].sort(
      (a, b) => Number(/post|blog|news/i.test(b)) - Number(/post|blog|news/i.test(a)),
    );
    if (i === 0) queue.push(...children.slice(0, CHILD_SITEMAPS));
  }
  const items = postsFromSitemap(pages, blogUrl);
  return items.length > 0 ? { url: blogUrl, items } : undefined;
}

/**
 * Posts from the feed the homepage announces, else from the blog page (its feed, then its list of
 * posts), else from the sitemap.
 */
async function readContent(
  session: CrawlSession,
  home: HtmlPage,
  urls: string[],
): Promise<Facts["content"]> {
  return (
    (await readFeed(session, feedLinks(home))) ??
    (await firstPage(session, urls, async (page) => {
      const fromFeed = await readFeed(session, feedLinks(page));
      if (fromFeed) return fromFeed;
      const items = extractPosts(page);
      return items.length > 0 ? { url: page.url, items } : undefined;
    })) ??
    readSitemap(session, home, urls[0] ?? new URL("/blog", home.url).href)
  );
}

/** The homepage, over each candidate URL in turn while the previous one cannot connect. */
async function readHomepage(
  session: CrawlSession,
  candidates: string[],
): Promise<HtmlPage | { reason: string }> {
  let reason = "no homepage to try";
  for (const url of candidates) {
    const outcome = await session.get(url, "html");
    if (outcome.ok) {
      if (!isHtml(outcome.page.contentType)) {
        return { reason: `${url} is not an HTML page (${outcome.page.contentType})` };
      }
      return parsePage(outcome.page.url, outcome.page.text);
    }
    reason = outcome.message;
    if (outcome.reason !== "network") break;
  }
  return { reason };
}

/**
 * Reads a competitor's site: the homepage, then its pricing, careers and blog pages (found from
 * the homepage's links, with the usual paths as fallbacks) in parallel. Sections whose page is
 * missing or unreadable are left out; only an unreadable homepage fails the observation.
 */
export async function observe(
  session: CrawlSession,
  homepages: string[],
  apis: AtsApis,
): Promise<Observation> {
  const home = await readHomepage(session, homepages);
  if ("reason" in home) return { ok: false, reason: home.reason };
  const pages: PageCandidates = discoverPages(home);
  const [pricing, hiring, content] = await Promise.all([
    readPricing(session, pages.pricing),
    readHiring(session, home, pages.careers, apis),
    readContent(session, home, pages.blog),
  ]);
  const facts: Facts = { messaging: { url: home.url, ...extractMessaging(home) } };
  if (pricing) facts.pricing = pricing;
  if (hiring) facts.hiring = hiring;
  if (content) facts.content = content;
  return { ok: true, homepage: home.url, facts };
}
