import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { DomainError, ErrorBody, ErrorCode } from "../errors.js";

/** The one mapping from an error's code to its HTTP status. */
const STATUS_OF: Record<ErrorCode, ContentfulStatusCode> = {
  validation_failed: 400,
  invalid_json: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_key_in_use: 409,
  brand_profile_missing: 409,
  limit_reached: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  llm_error: 502,
  llm_unavailable: 503,
  service_unavailable: 503,
  upstream_timeout: 504,
};

type ErrorFields = ErrorBody["error"] & { code: ErrorCode };

/** The project's error body, with the status its code maps to. */
export function errorResponse(c: Context, error: ErrorFields, headers?: Record<string, string>) {
  return c.json({ error } satisfies ErrorBody, STATUS_OF[error.code], headers);
}

/** A domain error as its response: Retry-After when it says when to ask again, a challenge on 401. */
export function domainErrorResponse(c: Context, err: DomainError) {
  const headers: Record<string, string> = {};
  if (err.retryAfterSeconds !== undefined) headers["Retry-After"] = String(err.retryAfterSeconds);
  if (err.code === "unauthorized") headers["WWW-Authenticate"] = 'Bearer realm="api"';
  return errorResponse(
    c,
    {
      code: err.code,
      message: err.message,
      ...(err.details === undefined ? {} : { details: err.details }),
    },
    headers,
  );
}
