/** Why a fetch was refused or failed; stable strings that end up in `last_error` codes and page reports. */
export type FetchErrorCode =
  | "invalid_url"
  | "blocked_address"
  | "dns_failure"
  | "connection_failed"
  | "timeout"
  | "too_many_redirects"
  | "too_large"
  | "unsupported_encoding"
  | "unsupported_content_type"
  | "http_error"
  /** The page shows a bot wall, a captcha, a block or login page instead of its content. */
  | "blocked"
  /** The page needs scripts to show its content and no browser is available here. */
  | "needs_browser"
  /** Rendering the page did not end within its bound (a script that never ends, a page never settling). */
  | "render_timeout"
  /** The page asked for more requests than a rendered page may make. */
  | "too_many_requests"
  /** The browser failed on the page (its renderer crashed, out of memory). */
  | "render_failed";

/** A refused or failed outbound request; the message is meant for people (it names the URL's problem). */
export class FetchError extends Error {
  constructor(
    readonly code: FetchErrorCode,
    message: string,
    /** The HTTP status, for `http_error`. */
    readonly status?: number,
    /** How long the site asked us to wait (`Retry-After` of a 429 or 503), in milliseconds. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = "FetchError";
  }
}

/** Refused or unresolvable before any connection: the host never saw the request. */
export const neverSent = (err: unknown): boolean =>
  err instanceof FetchError && ["invalid_url", "blocked_address", "dns_failure"].includes(err.code);

/** HTTP statuses a site answers while it is busy or briefly broken: the same request may succeed later. */
const TRANSIENT_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/** Whether trying the same request again later may succeed: a busy or broken site, a timeout, a drop. */
export const isTransient = (err: unknown): err is FetchError =>
  err instanceof FetchError &&
  (err.code === "timeout" ||
    err.code === "connection_failed" ||
    (err.code === "http_error" && TRANSIENT_STATUSES.has(err.status ?? 0)));

/** A `Retry-After` value (seconds or an HTTP date) in milliseconds from `now`; undefined if unreadable. */
export function parseRetryAfter(value: string | undefined | null, now = Date.now()) {
  if (!value) return undefined;
  const seconds = Number(value);
  if (value.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
