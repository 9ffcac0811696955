import { parseDocument, parseFeed as readFeed } from "htmlparser2";
import { withoutTrailingSlashes } from "../../web/url.js";
import { all, attr, type Element, first, type HtmlPage, resolveUrl, tag, textOf } from "./html.js";

/** A published piece of content: blog post, news item, announcement. */
export interface ContentItem {
  title: string;
  url: string;
  /** Publication day (`YYYY-MM-DD`) when the source gives one. */
  date: string | null;
}

/** Items kept per snapshot; feeds and sitemaps list far more than a change report needs. */
export const MAX_CONTENT_ITEMS = 50;

/** The identity of an item: its URL without query, fragment, trailing slash or `www.`. */
export function contentKey(url: string): string {
  const u = new URL(url);
  return `${u.hostname.replace(/^www\./, "")}${withoutTrailingSlashes(u.pathname)}`.toLowerCase();
}

export function dayOf(value: string | Date | undefined): string | null {
  const time = value instanceof Date ? value.getTime() : Date.parse(value?.trim() ?? "");
  return Number.isNaN(time) ? null : new Date(time).toISOString().slice(0, 10);
}

/** Newest first, then by URL, at most `MAX_CONTENT_ITEMS`, each URL once. */
export function newestItems(items: ContentItem[]): ContentItem[] {
  const byKey = new Map<string, ContentItem>();
  for (const item of items) {
    if (!byKey.has(contentKey(item.url))) byKey.set(contentKey(item.url), item);
  }
  return [...byKey.values()]
    .sort((a, b) => (b.date ?? "").localeCompare(a.date ?? "") || a.url.localeCompare(b.url))
    .slice(0, MAX_CONTENT_ITEMS);
}

/** Items of an RSS 2.0, RSS 1.0 or Atom feed; undefined when the text is no feed. */
export function parseFeed(text: string, base: string): ContentItem[] | undefined {
  const feed = readFeed(text);
  if (!feed) return undefined;
  return newestItems(
    feed.items.flatMap((item) => {
      const url = resolveUrl(item.link ?? item.id ?? "", base);
      const title = item.title?.replace(/\s+/g, " ").trim();
      return url && title ? [{ title, url, date: dayOf(item.pubDate) }] : [];
    }),
  );
}

export interface SitemapEntries {
  pages: Array<{ url: string; lastmod: string | null }>;
  /** Child sitemaps of a sitemap index. */
  sitemaps: string[];
}

export function parseSitemap(text: string): SitemapEntries | undefined {
  const doc = parseDocument(text, { xmlMode: true });
  const top = first(doc, () => true);
  if (!top || (top.name !== "urlset" && top.name !== "sitemapindex")) return undefined;
  const loc = (el: Element) => {
    const found = first(el, tag("loc"));
    return found ? resolveUrl(textOf(found), "http://invalid/") : undefined;
  };
  return {
    pages: all(top, tag("url")).flatMap((el) => {
      const url = loc(el);
      const lastmod = first(el, tag("lastmod"));
      return url ? [{ url, lastmod: lastmod ? dayOf(textOf(lastmod)) : null }] : [];
    }),
    sitemaps: all(top, tag("sitemap")).flatMap((el) => loc(el) ?? []),
  };
}

/** RSS and Atom feeds a page announces with `<link rel="alternate">`. */
export function feedLinks(page: HtmlPage): string[] {
  return all(page.root, (el) => el.name === "link" && /\balternate\b/i.test(attr(el, "rel")))
    .filter((link) => /rss|atom/i.test(attr(link, "type")))
    .flatMap((link) => resolveUrl(attr(link, "href"), page.url) ?? []);
}

const isLink = (el: Element) => el.name === "a" && "href" in el.attribs;

/** Listing pages that are not posts: pagination, categories, tags, authors. */
const NOT_A_POST = /\/(?:page|category|categories|tag|tags|author|authors|topics?)(?:\/|$)/i;

/** A post URL sits one or more segments below the blog's own path. */
function isPostUrl(url: string, blog: URL): boolean {
  const u = new URL(url);
  const prefix = blog.pathname.replace(/\/?$/, "/");
  return (
    u.host === blog.host &&
    u.pathname.startsWith(prefix) &&
    u.pathname.length > prefix.length + 1 &&
    !NOT_A_POST.test(u.pathname.slice(prefix.length - 1))
  );
}

/** Posts listed on a blog page: `<article>` cards, or else the links to pages below the blog. */
export function extractPosts(page: HtmlPage): ContentItem[] {
  const blog = new URL(page.url);
  const items: ContentItem[] = [];
  for (const article of all(page.root, tag("article"))) {
    const heading = first(article, tag("h1", "h2", "h3", "h4"));
    const anchor = (heading && first(heading, isLink)) ?? first(article, isLink);
    const url = anchor && resolveUrl(attr(anchor, "href"), page.url);
    const title = textOf(heading ?? anchor ?? article);
    if (!url || !title) continue;
    const time = first(article, tag("time"));
    const date = time ? dayOf(attr(time, "datetime") || textOf(time)) : null;
    items.push({ title, url, date });
  }
  if (items.length === 0) {
    for (const anchor of all(page.root, isLink)) {
      const url = resolveUrl(attr(anchor, "href"), page.url);
      const title = textOf(anchor);
      if (url && title.length >= 8 && isPostUrl(url, blog)) items.push({ title, url, date: null });
    }
  }
  return newestItems(items);
}

/** A readable title from a post's slug: `/blog/launching-v2` gives "Launching v2". */
function titleFromSlug(url: string): string {
  const path = withoutTrailingSlashes(new URL(url).pathname);
  const slug = decodeURIComponent(path.split("/").pop() ?? "");
  const words = slug
    .replace(/\.[a-z]+$/i, "")
    .replace(/[-_]+/g, " ")
    .trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Posts among a sitemap's pages: those below the blog's path. */
export function postsFromSitemap(pages: SitemapEntries["pages"], blogUrl: string): ContentItem[] {
  const blog = new URL(blogUrl);
  return newestItems(
    pages
      .filter((page) => isPostUrl(page.url, blog))
      .map((page) => ({ title: titleFromSlug(page.url), url: page.url, date: page.lastmod })),
  );
}
