/**
 * What a log line may show of a URL someone gave the service (a webhook endpoint, a source, a
 * crawl's pages): its origin and path. The query string, the fragment and any user name or
 * password are dropped, since that is where tokens ride (`?token=`, `https://user:key@host`). The
 * API's own answers and records keep the URL whole; only logs go through here.
 */
export function redactUrl(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = typeof url === "string" ? new URL(url) : url;
  } catch {
    return "[not a URL]";
  }
  // `origin` never carries user info; a scheme without an origin (mailto:, data:) shows no more.
  return parsed.origin === "null"
    ? `${parsed.protocol}[redacted]`
    : parsed.origin + parsed.pathname;
}

/** An http(s) URL inside free text, up to the first blank, quote or bracket. */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>()`]+/gi;

/** Free text (an error's message or stack) with every http(s) URL in it redacted. */
export const redactUrls = (text: string): string =>
  text.replace(URL_IN_TEXT, (url) => redactUrl(url));

/**
 * An error as a log line may carry it: a copy of the same class whose message, stack, cause and
 * other text fields have their URLs redacted (fetch errors name the URL they failed on). Anything
 * else passes unchanged, a string redacted.
 */
export function redactError(error: unknown, depth = 0): unknown {
  if (typeof error === "string") return redactUrls(error);
  if (!(error instanceof Error) || depth > 5) return error;
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error;
  const own = error as unknown as Record<string, unknown>;
  for (const key of Object.keys(error)) {
    const value = own[key];
    (copy as unknown as Record<string, unknown>)[key] =
      typeof value === "string" ? redactUrls(value) : value;
  }
  const hidden = (value: unknown) => ({ value, writable: true, configurable: true });
  Object.defineProperty(copy, "message", hidden(redactUrls(error.message)));
  if (error.stack !== undefined)
    Object.defineProperty(copy, "stack", hidden(redactUrls(error.stack)));
  if (error.cause !== undefined) {
    Object.defineProperty(copy, "cause", hidden(redactError(error.cause, depth + 1)));
  }
  return copy;
}
