import type { ContentfulStatusCode } from "hono/utils/http-status";

/** Stable, machine-readable error codes of the API. */
export type ErrorCode =
  | "validation_failed"
  | "invalid_json"
  | "invalid_cursor"
  | "not_supported"
  | "unauthorized"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "quota_exceeded"
  | "brand_profile_missing"
  | "llm_unavailable"
  | "llm_error"
  | "upstream_timeout"
  | "internal_error"
  | "service_unavailable";

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown; requestId?: string };
}

/** An error meant for the client: its status, code and message are sent as they are. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const notFound = (what: string, id: string) =>
  new ApiError(404, "not_found", `No ${what} with id ${id}`);
