import { ExtractionError } from "../web/page.js";
import type { Readings, Role } from "./document-roles.js";
import { type AtsApis, type AtsBoard, boardApiUrl, parseBoard } from "./extract/ats.js";
import { postsFromSitemap } from "./extract/content.js";
import type { PageReader } from "./page-reader.js";
import type { CheckSession, FetchedResource } from "./session.js";
import type { Facts } from "./snapshot.js";

export type Observation =
  | { ok: true; homepage: string; facts: Facts; name: string | null }
  /** `blocked`: the homepage was a bot wall, captcha, block or login page. */
  | { ok: false; reason: string; blocked?: boolean };

/** One check's way to the site: its requests (the session), and where what they fetch is read. */
export interface Visit {
  session: CheckSession;
  read: PageReader;
}

/** Candidate pages tried per kind before giving up on it: linked pages first, then guesses. */
const ATTEMPTS_PER_KIND = 2;
/** Child sitemaps of a sitemap index read when looking for posts. */
const CHILD_SITEMAPS = 2;

const isHtml = (contentType: string) => /html/.test(contentType) || contentType === "";

/** A fetched document read as `role`, or why it cannot be read (too deep, too slow, too big). */
async function readFetched<R extends Role>(
  visit: Visit,
  role: R,
  { url, text }: FetchedResource,
): Promise<Readings[R] | { reason: string }> {
  try {
    return await visit.read(role, url, text);
  } catch (err) {
    if (err instanceof ExtractionError) return { reason: `${url}: ${err.message}` };
    throw err;
  }
}

/**
 * A page (or a feed, a sitemap) fetched and read as `role`; undefined when it cannot be fetched,
 * a page is no HTML, or it cannot be read.
 */
async function fetchReading<R extends Exclude<Role, "home">>(
  visit: Visit,
  url: string,
  role: R,
): Promise<Readings[R] | undefined> {
  const kind = role === "feed" || role === "sitemap" ? "feed" : "html";
  const outcome = await visit.session.get(url, kind);
  if (!outcome.ok || (kind === "html" && !isHtml(outcome.page.contentType))) return undefined;
  const reading = await readFetched(visit, role, outcome.page);
  return "reason" in reading ? undefined : reading;
}

/** The first candidate page from which `take` gets something, trying a few at most. */
async function firstPage<R extends "pricing" | "careers" | "blog", T>(
  visit: Visit,
  urls: string[],
  role: R,
  take: (page: Readings[R]) => T | undefined | Promise<T | undefined>,
): Promise<T | undefined> {
  for (const url of urls.slice(0, ATTEMPTS_PER_KIND)) {
    const page = await fetchReading(visit, url, role);
    const found = page && (await take(page));
    if (found) return found;
  }
  return undefined;
}

async function readPricing(visit: Visit, urls: string[]): Promise<Facts["pricing"]> {
  return firstPage(visit, urls, "pricing", ({ url, plans }) =>
    plans.length > 0 ? { url, plans } : undefined,
  );
}

/** Jobs from the first ATS board a page embeds, through the vendor's public JSON API. */
async function readBoard(
  visit: Visit,
  page: { url: string; boards: AtsBoard[] },
  apis: AtsApis,
): Promise<Facts["hiring"]> {
  const [board] = page.boards;
  if (!board) return undefined;
  const outcome = await visit.session.get(boardApiUrl(board, apis), "json", { robots: false });
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
  visit: Visit,
  home: Readings["home"],
  urls: string[],
  apis: AtsApis,
): Promise<Facts["hiring"]> {
  return (
    (await readBoard(visit, home, apis)) ??
    firstPage(visit, urls, "careers", async (page) => {
      const board = await readBoard(visit, page, apis);
      if (board) return board;
      return page.jobs.length > 0
        ? { url: page.url, source: "page" as const, jobs: page.jobs }
        : undefined;
    })
  );
}

async function readFeed(visit: Visit, urls: string[]): Promise<Facts["content"]> {
  for (const url of urls.slice(0, ATTEMPTS_PER_KIND)) {
    const feed = await fetchReading(visit, url, "feed");
    if (feed?.items && feed.items.length > 0) return { url: feed.url, items: feed.items };
  }
  return undefined;
}

/** Posts from the sitemaps robots.txt names (or `/sitemap.xml`), one index level deep. */
async function readSitemap(
  visit: Visit,
  home: Readings["home"],
  blogUrl: string,
): Promise<Facts["content"]> {
  const origin = new URL(home.url).origin;
  const named = await visit.session.sitemaps(origin);
  const queue = named.length > 0 ? named.slice(0, 1) : [`${origin}/sitemap.xml`];
  const pages: Array<{ url: string; lastmod: string | null }> = [];
  // The queue grows while read: an index's children are read after it.
  for (const [i, url] of queue.entries()) {
    if (i > CHILD_SITEMAPS) break;
    const entries = (await fetchReading(visit, url, "sitemap"))?.entries;
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
  visit: Visit,
  home: Readings["home"],
  urls: string[],
): Promise<Facts["content"]> {
  return (
    (await readFeed(visit, home.feeds)) ??
    (await firstPage(visit, urls, "blog", async (page) => {
      const fromFeed = await readFeed(visit, page.feeds);
      if (fromFeed) return fromFeed;
      return page.posts.length > 0 ? { url: page.url, items: page.posts } : undefined;
    })) ??
    readSitemap(visit, home, urls[0] ?? new URL("/blog", home.url).href)
  );
}

/** The homepage, over each candidate URL in turn while the previous one cannot connect. */
async function readHomepage(
  visit: Visit,
  candidates: string[],
): Promise<Readings["home"] | { reason: string; blocked?: boolean }> {
  let reason = "no homepage to try";
  for (const url of candidates) {
    const outcome = await visit.session.get(url, "html");
    if (outcome.ok) {
      if (!isHtml(outcome.page.contentType)) {
        return { reason: `${url} is not an HTML page (${outcome.page.contentType})` };
      }
      return readFetched(visit, "home", outcome.page);
    }
    reason = outcome.message;
    if (outcome.reason === "blocked") return { reason, blocked: true };
    if (outcome.reason !== "network") break;
  }
  return { reason };
}

/**
 * Reads a competitor's site: the homepage, then its pricing, careers and blog pages (found from
 * the homepage's links, with the usual paths as fallbacks) in parallel. Every page, feed and
 * sitemap is read in the sandbox (page-reader.ts), never on the caller's thread. Sections whose page is
 * missing or unreadable are left out; only an unreadable homepage fails the observation.
 */
export async function observe(
  visit: Visit,
  homepages: string[],
  apis: AtsApis,
): Promise<Observation> {
  const home = await readHomepage(visit, homepages);
  if ("reason" in home) return { ok: false, ...home };
  const pages = home.candidates;
  const [pricing, hiring, content] = await Promise.all([
    readPricing(visit, pages.pricing),
    readHiring(visit, home, pages.careers, apis),
    readContent(visit, home, pages.blog),
  ]);
  const facts: Facts = { messaging: { url: home.url, ...home.messaging } };
  if (pricing) facts.pricing = pricing;
  if (hiring) facts.hiring = hiring;
  if (content) facts.content = content;
  return { ok: true, homepage: home.url, facts, name: home.name };
}
