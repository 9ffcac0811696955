import { type ContentKind, decodeText } from "../web/content-type.js";
import { FetchError } from "../web/errors.js";
import type { SafeFetcher } from "../web/fetch.js";
import type { DocumentKind, Fetcher } from "./fetcher.js";

const KINDS: Record<DocumentKind, readonly ContentKind[]> = {
  html: ["html", "xhtml"],
  feed: ["xml"],
  json: ["json"],
  text: ["text"],
};

/**
 * Checks fetch through the service's safe fetcher (SSRF guard, redirects, size and time limits).
 * It throws on HTTP errors; checks want the status (a 404 robots.txt allows everything), so an
 * HTTP error becomes an answer with an empty body. A robots.txt that is not text (single-page apps
 * answer every path with their HTML shell) holds no rules: it reads as an empty file.
 */
export function competitorFetcher(web: SafeFetcher): Fetcher {
  return async (url, { kind, timeoutMs }) => {
    try {
      const res = await web.fetch(url, { accept: KINDS[kind], timeoutMs });
      return {
        url: res.url,
        status: res.status,
        contentType: res.mime,
        text: decodeText(res.body, res.charset),
      };
    } catch (err) {
      if (err instanceof FetchError && err.code === "http_error" && err.status) {
        return { url, status: err.status, contentType: "", text: "" };
      }
      if (err instanceof FetchError && err.code === "unsupported_content_type" && kind === "text") {
        return { url, status: 200, contentType: "", text: "" };
      }
      throw err;
    }
  };
}
