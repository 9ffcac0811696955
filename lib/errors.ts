/**
 * Domain errors: what went wrong, as a stable code the caller can act on. The domain knows no
 * HTTP status; `lib/http/errors.ts` holds the one mapping from code to status.
 */

/** Stable, machine-readable error codes of the API. */
export type ErrorCode =
  | "validation_failed"
  | "invalid_json"
  | "invalid_cursor"
  | "unauthorized"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "idempotency_key_in_use"
  | "idempotency_key_reused"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "quota_exceeded"
  | "limit_reached"
  | "brand_profile_missing"
  | "llm_unavailable"
  | "llm_error"
  | "upstream_timeout"
  | "internal_error"
  | "service_unavailable";

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown; requestId?: string };
}

export interface DomainErrorOptions {
  /** Sent as the body's `details`. */
  details?: unknown;
  /** When asking again may succeed. */
  retryAfterSeconds?: number;
}

/** An error meant for the caller: its code, message and details are sent as they are. */
export class DomainError extends Error {
  readonly details: unknown;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    { details, retryAfterSeconds }: DomainErrorOptions = {},
  ) {
    super(message);
    this.name = "DomainError";
    this.details = details;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export const isDomainError = (err: unknown, code?: ErrorCode): err is DomainError =>
  err instanceof DomainError && (code === undefined || err.code === code);

export const notFound = (what: string, id: string) =>
  new DomainError("not_found", `No ${what} with id ${id}`);

export const invalid = (message: string, details?: unknown) =>
  new DomainError("validation_failed", message, { details });

export const conflict = (message: string, details?: unknown) =>
  new DomainError("conflict", message, { details });

export const serviceUnavailable = (message: string, details?: unknown) =>
  new DomainError("service_unavailable", message, { details });
