import { XMLParser } from "fast-xml-parser";

/**
 * Sitemaps (`<urlset>`) and sitemap indexes (`<sitemapindex>`), and plain-text sitemaps with one
 * URL a line. Reading is bounded in files, nesting and entries, because a sitemap is input from
 * the site, and sites can be hostile or just enormous.
 */

export interface SitemapEntries {
  /** Page URLs. */
  urls: string[];
  /** Nested sitemap URLs (from an index). */
  sitemaps: string[];
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  maxNestedTags: 16,
  processEntities: { maxEntityCount: 10, maxTotalExpansions: 10_000, maxExpandedLength: 100_000 },
  isArray: (name) => name === "url" || name === "sitemap",
});

interface Located {
  loc?: unknown;
}

const locations = (items: unknown): string[] =>
  (Array.isArray(items) ? (items as Located[]) : [])
    .map((item) => (typeof item?.loc === "string" ? item.loc.trim() : ""))
    .filter((loc) => /^https?:\/\//i.test(loc));

/** The entries of one sitemap document; anything unreadable gives no entries. */
export function parseSitemap(text: string): SitemapEntries {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith("<")) {
    const urls = trimmed.split(/\r?\n/).map((line) => line.trim());
    return { urls: urls.filter((line) => /^https?:\/\/\S+$/i.test(line)), sitemaps: [] };
  }
  let doc: { urlset?: { url?: unknown }; sitemapindex?: { sitemap?: unknown } };
  try {
    doc = parser.parse(text) as typeof doc;
  } catch {
    return { urls: [], sitemaps: [] };
  }
  return { urls: locations(doc.urlset?.url), sitemaps: locations(doc.sitemapindex?.sitemap) };
}

export interface SitemapLimits {
  /** Page URLs returned at most. */
  maxUrls: number;
  /** Sitemap files read at most, indexes included. */
  maxFiles: number;
  /** How deep indexes may nest (1: the given files only). */
  maxDepth: number;
}

const DEFAULT_SITEMAP_LIMITS: SitemapLimits = { maxUrls: 5000, maxFiles: 20, maxDepth: 3 };

/**
 * Reads sitemaps breadth first from the given files, following indexes. `load` answers a file's
 * text, or undefined when it cannot be had (missing, refused, too large): that file is skipped.
 */
export async function readSitemaps(
  start: string[],
  load: (url: string) => Promise<string | undefined>,
  limits: SitemapLimits = DEFAULT_SITEMAP_LIMITS,
): Promise<string[]> {
  const urls = new Set<string>();
  const seen = new Set<string>();
  let level = [...new Set(start)];
  for (let depth = 1; depth <= limits.maxDepth && level.length > 0; depth++) {
    const next: string[] = [];
    for (const file of level) {
      if (seen.size >= limits.maxFiles || urls.size >= limits.maxUrls) return [...urls];
      if (seen.has(file)) continue;
      seen.add(file);
      const text = await load(file);
      if (text === undefined) continue;
      const entries = parseSitemap(text);
      for (const url of entries.urls) {
        if (urls.size >= limits.maxUrls) break;
        urls.add(url);
      }
      next.push(...entries.sitemaps);
    }
    level = next;
  }
  return [...urls];
}
