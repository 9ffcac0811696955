import type { MiddlewareHandler } from "hono";
import { cors as honoCors } from "hono/cors";
import type { CorsOrigins } from "../config.js";

/** Request headers a page's script may send (beyond the CORS-safelisted ones). */
export const CORS_ALLOW_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key"];

/** Response headers a page's script may read (beyond the CORS-safelisted ones). */
export const CORS_EXPOSE_HEADERS = [
  "X-Request-Id",
  "Retry-After",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "Allow",
  "WWW-Authenticate",
  "Idempotent-Replayed",
];

/** How long a browser may reuse a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** The `Access-Control-Allow-Origin` value for a request's `Origin`, or null when not allowed. */
export function allowedOrigin(origins: CorsOrigins, origin: string | null | undefined) {
  if (origins === "*") return "*";
  return origin && origins.includes(origin) ? origin : null;
}

/**
 * CORS on every answer of an app, errors included (they are built on the same context), and
 * preflights (`OPTIONS`) answered 204 before any key is asked for. With no allowed origin the
 * headers are simply absent, so browsers refuse to hand answers to other origins' scripts.
 */
export function cors(origins: CorsOrigins): MiddlewareHandler {
  return honoCors({
    origin: (origin) => allowedOrigin(origins, origin),
    allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
    allowHeaders: CORS_ALLOW_HEADERS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE,
  });
}

/** The CORS headers of an answer built outside an app (the local gateway's own 413). */
export function corsHeaders(origins: CorsOrigins, origin: string | null): Record<string, string> {
  const allow = allowedOrigin(origins, origin);
  if (!allow) return { Vary: "Origin" };
  return {
    "Access-Control-Allow-Origin": allow,
    "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS.join(","),
    Vary: "Origin",
  };
}
