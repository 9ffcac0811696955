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
  | "http_error";

/** A refused or failed outbound request; the message is meant for people (it names the URL's problem). */
export class FetchError extends Error {
  constructor(
    readonly code: FetchErrorCode,
    message: string,
    /** The HTTP status, for `http_error`. */
    readonly status?: number,
  ) {
    super(message);
    this.name = "FetchError";
  }
}

/** Refused or unresolvable before any connection: the host never saw the request. */
export const neverSent = (err: unknown): boolean =>
  err instanceof FetchError && ["invalid_url", "blocked_address", "dns_failure"].includes(err.code);
