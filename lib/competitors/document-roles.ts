import { discoverPages, type PageCandidates } from "./discover.js";
import { type AtsBoard, findBoards } from "./extract/ats.js";
import {
  type ContentItem,
  extractPosts,
  feedLinks,
  parseFeed,
  parseSitemap,
  type SitemapEntries,
} from "./extract/content.js";
import { linksOf, loadHtml } from "./extract/html.js";
import { extractCompanyName } from "./extract/identity.js";
import { extractJobs, type JobPosting } from "./extract/jobs.js";
import { extractMessaging, type Messaging } from "./extract/messaging.js";
import { extractPlans, type Plan } from "./extract/pricing.js";

/**
 * What a check takes from each document it fetches, by the part the document plays, read inside
 * the sandbox thread only (lib/files/sandbox.ts; the calling side is page-reader.ts). The fetched text
 * goes in and plain data comes out: htmlparser2's DOM never leaves the thread, and a page that
 * is too deep, too slow or too big to parse fails on its own.
 */
export interface Readings {
  /** The homepage: where the other pages are, what it embeds and announces, what it claims. */
  home: {
    url: string;
    candidates: PageCandidates;
    boards: AtsBoard[];
    feeds: string[];
    messaging: Messaging;
    /** The company's name as the site states it; null when it does not. */
    name: string | null;
  };
  pricing: { url: string; plans: Plan[] };
  careers: { url: string; boards: AtsBoard[]; jobs: JobPosting[] };
  blog: { url: string; feeds: string[]; posts: ContentItem[] };
  /** An RSS or Atom feed; no items when the text is no feed. */
  feed: { url: string; items: ContentItem[] | undefined };
  sitemap: { url: string; entries: SitemapEntries | undefined };
  /** Any page, for the addresses it links to (the site watch's crawl without a sitemap). */
  links: { url: string; links: string[] };
}

/** Links kept from one page: a page of thousands of links is a directory, not a site's sections. */
const MAX_LINKS = 1_000;

export type Role = keyof Readings;

/** One fetched document for the sandbox thread: the final URL (links resolve against it). */
export interface ReadJob {
  role: Role;
  url: string;
  text: string;
}

/** Reads one document as its role; an HTML page nested too deep is refused (ExtractionError). */
export function readDocument({ role, url, text }: ReadJob): Readings[Role] {
  if (role === "feed") return { url, items: parseFeed(text, url) };
  if (role === "sitemap") return { url, entries: parseSitemap(text) };
  const page = loadHtml(url, text);
  switch (role) {
    case "home":
      return {
        url,
        candidates: discoverPages(page),
        boards: findBoards(text),
        feeds: feedLinks(page),
        messaging: extractMessaging(page),
        name: extractCompanyName(page),
      };
    case "pricing":
      return { url, plans: extractPlans(page) };
    case "careers":
      return { url, boards: findBoards(text), jobs: extractJobs(page) };
    case "blog":
      return { url, feeds: feedLinks(page), posts: extractPosts(page) };
    case "links":
      return {
        url,
        links: linksOf(page)
          .slice(0, MAX_LINKS)
          .map((link) => link.url),
      };
  }
}
