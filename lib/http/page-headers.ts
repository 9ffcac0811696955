import type { Context } from "hono";

/**
 * The headers of what the service serves to browsers (the console, the API reference): no
 * sniffing a type other than the one given, no referrer sent from the page, and for a page its
 * content security policy and no framing (clickjacking), `frame-ancestors` and `X-Frame-Options`
 * for browsers that know only the older header.
 */

/** The sources a page may load each kind of resource from; anything not listed is `'none'`. */
export type PageSources = Partial<
  Record<
    "script-src" | "style-src" | "img-src" | "font-src" | "connect-src" | "worker-src",
    string[]
  >
>;

/** A policy allowing `sources` and nothing else: no `<base>`, no form posts, no framing. */
export const contentSecurityPolicy = (sources: PageSources): string =>
  [
    "default-src 'none'",
    ...Object.entries(sources).map(([directive, allowed]) => `${directive} ${allowed.join(" ")}`),
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");

/** Sets the headers of an answer to a browser; `csp` for an HTML page. */
export function setPageHeaders(c: Context, csp?: string): void {
  c.header("x-content-type-options", "nosniff");
  c.header("referrer-policy", "no-referrer");
  if (csp !== undefined) {
    c.header("content-security-policy", csp);
    c.header("x-frame-options", "DENY");
  }
}
