/**
 * What a check's session (`session.ts`) answers for a request: the final URL (after redirects),
 * the status and the body as text, read through the service's polite session of `lib/web`.
 */
export interface FetchedResource {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  /** The media type, lowercase, without parameters (`text/html`). */
  contentType: string;
  text: string;
}

/** What the caller will parse: a web page, a feed or sitemap, a job board's JSON. */
export type DocumentKind = "html" | "feed" | "json";
