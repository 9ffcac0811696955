import { LRUCache } from "lru-cache";
import robotsParserModule from "robots-parser";
import { decodeText } from "./content-type.js";
import { FetchError, neverSent } from "./errors.js";
import type { FetchedContent, FetchOptions } from "./fetch.js";

/** The package is CommonJS (`module.exports = fn`) but its types declare a default export. */
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default;

/** The product token matched against `User-agent:` lines. */
export const ROBOTS_AGENT = "kb-intel-bot";

/** RFC 9309 lets crawlers stop reading robots.txt after 500 KiB. */
const MAX_ROBOTS_BYTES = 500 * 1024;
/**
 * Longer lines are dropped before parsing: no URL we fetch is that long, and the parser's cost
 * for every URL it checks grows with each rule's length (a 100 KB rule took ~7 ms for each check of a 1 KB URL).
 */
const MAX_ROBOTS_LINE = 2048;

const withoutLongLines = (text: string) =>
  text
    .split("\n")
    .filter((line) => line.length <= MAX_ROBOTS_LINE)
    .join("\n");

export interface RobotsRules {
  isAllowed(url: string): boolean;
  /** The host's `Crawl-delay`, when it sets one. */
  crawlDelayMs: number | undefined;
  /** `Sitemap:` URLs the file lists. */
  sitemaps: string[];
  /** Why nothing is allowed for now: the file could not be read (a server error, no answer). */
  unreadable?: FetchError;
}

const allowAll: RobotsRules = { isAllowed: () => true, crawlDelayMs: undefined, sitemaps: [] };
const disallowAll = (unreadable: FetchError): RobotsRules => ({
  isAllowed: () => false,
  crawlDelayMs: undefined,
  sitemaps: [],
  unreadable,
});

/** How robots.txt is fetched: a session's polite `fetch`, or the safe fetcher's own. */
export type RobotsFetch = (url: string, options: FetchOptions) => Promise<FetchedContent>;

export interface RobotsOptions {
  /** How long a host's rules are kept. */
  ttlMs?: number;
  /** Hosts kept at most; the least recently used goes first. */
  maxHosts?: number;
  now?: () => number;
}

/**
 * robots.txt per origin, cached for `ttlMs`. As RFC 9309 says: a 4xx (no file) allows everything;
 * a server error or an unreachable host disallows everything for now, since the site may be in
 * trouble (so does a file too large to read whole, rather than guess at its rules).
 */
export class RobotsCache {
  private readonly entries: LRUCache<string, Promise<RobotsRules>>;

  constructor(
    private readonly fetch: RobotsFetch,
    options: RobotsOptions = {},
  ) {
    this.entries = new LRUCache({
      max: options.maxHosts ?? 500,
      ttl: options.ttlMs ?? 60 * 60_000,
      // The clock is read at each lookup (one per page), not reused for a millisecond.
      ttlResolution: 0,
      ...(options.now ? { perf: { now: options.now } } : {}),
    });
  }

  /** The rules of a URL's origin. */
  rules(url: string | URL): Promise<RobotsRules> {
    const { origin } = new URL(url);
    const cached = this.entries.get(origin);
    if (cached) return cached;
    const rules = this.load(origin);
    this.entries.set(origin, rules);
    // An unexpected failure is not an answer worth keeping.
    rules.catch(() => {
      if (this.entries.peek(origin) === rules) this.entries.delete(origin);
    });
    return rules;
  }

  private async load(origin: string): Promise<RobotsRules> {
    const url = `${origin}/robots.txt`;
    try {
      const res = await this.fetch(url, { accept: ["text"], maxBytes: MAX_ROBOTS_BYTES });
      const robots = robotsParser(url, withoutLongLines(decodeText(res.body, res.charset)));
      const delay = robots.getCrawlDelay(ROBOTS_AGENT);
      return {
        isAllowed: (page) => robots.isAllowed(page, ROBOTS_AGENT) !== false,
        crawlDelayMs: delay === undefined ? undefined : delay * 1000,
        sitemaps: robots.getSitemaps(),
      };
    } catch (err) {
      // Refused or unresolvable before any connection: the page on that host fails the same
      // way, so its report gives this reason rather than "disallowed by robots.txt".
      if (!(err instanceof FetchError) || neverSent(err)) throw err;
      // A 200 that is not text (an HTML error page) is no robots.txt either.
      const missing =
        (err.code === "http_error" && (err.status ?? 0) < 500) ||
        err.code === "unsupported_content_type";
      return missing ? allowAll : disallowAll(err);
    }
  }
}
