import { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";

export interface RetryPolicy {
  maxRetries: number;
  /** The first backoff step; each retry doubles it, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * How long the provider asked us to wait: `retry-after-ms` (OpenAI, Azure), else `retry-after`
 * in seconds or as an HTTP date.
 */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get("retry-after-ms") ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * Whether sending the same request again may succeed: rate limits, server errors and dropped
 * connections. A timeout is not retried: each attempt already had the operation's whole budget.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof APIConnectionTimeoutError) return false;
  if (err instanceof APIConnectionError) return true;
  if (!(err instanceof APIError) || err.status === undefined) return false;
  return err.status === 408 || err.status === 429 || err.status >= 500;
}

/** Exponential backoff with equal jitter: half of each step is fixed, half random, so callers spread out. */
export function backoffMs(retry: number, policy: RetryPolicy): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return step / 2 + Math.random() * (step / 2);
}

/** The wait before retry number `retry` (0-based), or undefined when the error is final. */
export function retryDelay(err: unknown, retry: number, policy: RetryPolicy): number | undefined {
  if (retry >= policy.maxRetries || !isRetryable(err)) return undefined;
  const asked = err instanceof APIError ? retryAfterMs(err.headers) : undefined;
  return asked ?? backoffMs(retry, policy);
}
