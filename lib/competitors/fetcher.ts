/**
 * The one thing a competitor check needs from the outside world: a GET that answers the final URL
 * (after redirects), the status and the body as text. The service's safe fetcher (`lib/web`)
 * provides it in production (SSRF guard, redirects, size and time limits); tests may pass a
 * fetcher over their fixture servers. Keeping the dependency this narrow keeps checks testable and
 * keeps the API bundle free of anything heavier than the fetcher itself.
 */
export interface FetchedResource {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  /** The media type, lowercase, without parameters (`text/html`). */
  contentType: string;
  text: string;
}

/** What the caller will parse: a web page, a feed or sitemap, a job board's JSON, robots.txt. */
export type DocumentKind = "html" | "feed" | "json" | "text";

export interface FetchOptions {
  /** Other kinds of document may be refused (rejected) rather than read. */
  kind: DocumentKind;
  /** Give up after this long; the check's own deadline is already folded in. */
  timeoutMs: number;
}

/**
 * Answers any HTTP response (4xx and 5xx included); rejects when there is none to give: refused
 * address, DNS or TLS failure, timeout, or a body over the size limit.
 */
export type Fetcher = (url: string, options: FetchOptions) => Promise<FetchedResource>;
