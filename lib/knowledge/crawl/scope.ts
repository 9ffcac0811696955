/**
 * Which URLs belong to a crawl, as pure rules: the seed's host (and optionally its subdomains; a
 * leading `www.` is ignored on both sides), under the seed's path unless `includePaths` say
 * otherwise, minus `excludePaths`, and nothing that looks like a trap. Query-string explosions
 * need a count per path, so the crawl store handles those.
 */

export interface ScopeSettings {
  seedUrl: string;
  includeSubdomains: boolean;
  includePaths: string[];
  excludePaths: string[];
  maxDepth: number;
}

/**
 * Why a URL is not crawled; undefined when it is. `outside` and `depth` URLs are not part of the
 * crawl and are not recorded (every page at the depth limit would add dozens of them).
 */
export type ScopeVerdict = "outside" | "filter" | "depth" | "trap" | undefined;

const MAX_URL_LENGTH = 1024;
const MAX_SEGMENTS = 30;
/** A path segment seen this often (`/a/b/a/b/a/`) means relative links feeding on themselves. */
const MAX_SEGMENT_REPEATS = 3;
const MAX_QUERY_PARAMS = 12;

const bareHost = (hostname: string) => hostname.replace(/^www\./, "");

/**
 * Told of each step a path matcher takes (a character of the path compared, or a star taking one
 * more): tests count the matcher's work with it instead of timing it.
 */
export type OnStep = () => void;

/**
 * Whether `glob` matches all of `text`, `*` standing for any run of characters. Greedy with one
 * saved star: on a mismatch only the latest star takes one more character, so the work is at most
 * the product of the two lengths, never exponential as backtracking `.*` can be.
 */
function globMatches(glob: string, text: string, onStep?: OnStep): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let starText = 0;
  while (t < text.length) {
    onStep?.();
    if (glob[g] === "*") {
      star = g++;
      starText = t;
    } else if (glob[g] === text[t]) {
      g++;
      t++;
    } else if (star >= 0) {
      g = star + 1;
      t = ++starText;
    } else {
      return false;
    }
  }
  while (glob[g] === "*") g++;
  return g === glob.length;
}

/**
 * A path pattern matches a path and everything under it; `*` matches any run of characters.
 * `/blog` matches `/blog` and `/blog/post` but not `/blogroll`; `/blog*` matches all three.
 */
export function pathPattern(pattern: string, onStep?: OnStep): (path: string) => boolean {
  const glob = pattern.endsWith("/") ? pattern.slice(0, -1) : pattern;
  return (path) => globMatches(glob, path, onStep) || globMatches(`${glob}/*`, path, onStep);
}

/** The folder a seed stands for: its path, or the folder of a path that names a file. */
export function seedFolder(seedPath: string): string {
  const slash = seedPath.lastIndexOf("/");
  const namesFile = slash >= 0 && seedPath.includes(".", slash);
  const folder = namesFile ? seedPath.slice(0, slash) : seedPath;
  return folder.replace(/\/$/, "") || "/";
}

export class CrawlScope {
  private readonly host: string;
  private readonly port: string;
  private readonly include: Array<(path: string) => boolean>;
  private readonly exclude: Array<(path: string) => boolean>;

  constructor(private readonly settings: ScopeSettings) {
    const seed = new URL(settings.seedUrl);
    this.host = bareHost(seed.hostname);
    this.port = seed.port;
    const patterns =
      settings.includePaths.length > 0 ? settings.includePaths : [seedFolder(seed.pathname)];
    this.include = patterns.map((pattern) => pathPattern(pattern));
    this.exclude = settings.excludePaths.map((pattern) => pathPattern(pattern));
  }

  /** Whether a URL is on the crawl's site at all (host, subdomains, port). */
  onSite(url: URL): boolean {
    const host = bareHost(url.hostname);
    const hostOk =
      host === this.host || (this.settings.includeSubdomains && host.endsWith(`.${this.host}`));
    return hostOk && url.port === this.port;
  }

  /** The verdict on a canonical URL found at a depth (the seed is depth 0). */
  judge(href: string, depth: number): ScopeVerdict {
    const url = new URL(href);
    if (!this.onSite(url)) return "outside";
    if (!this.pathAllowed(url.pathname)) return "filter";
    if (looksLikeTrap(url)) return "trap";
    if (depth > this.settings.maxDepth) return "depth";
    return undefined;
  }

  /** Whether a path passes the include and exclude patterns. */
  pathAllowed(path: string): boolean {
    return (
      this.include.some((matches) => matches(path)) &&
      !this.exclude.some((matches) => matches(path))
    );
  }
}

function looksLikeTrap(url: URL): boolean {
  if (url.href.length > MAX_URL_LENGTH) return true;
  const segments = url.pathname.split("/").filter(Boolean);
  if (segments.length > MAX_SEGMENTS) return true;
  const counts = new Map<string, number>();
  for (const segment of segments) {
    const count = (counts.get(segment) ?? 0) + 1;
    if (count >= MAX_SEGMENT_REPEATS) return true;
    counts.set(segment, count);
  }
  return [...url.searchParams.keys()].length > MAX_QUERY_PARAMS;
}
