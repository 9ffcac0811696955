import { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { describe, expect, it } from "vitest";
import { backoffMs, isRetryable, retryAfterMs, retryDelay } from "../../lib/llm/retry.js";

const policy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 1000 };
const status = (code: number, headers: Record<string, string> = {}) =>
  APIError.generate(code, { message: "x" }, undefined, new Headers(headers));

describe("retry policy", () => {
  it("retries rate limits, server errors and dropped connections only", () => {
    expect([429, 500, 502, 503, 408].map((s) => isRetryable(status(s)))).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([400, 401, 404, 422].map((s) => isRetryable(status(s)))).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(isRetryable(new APIConnectionError({ message: "reset" }))).toBe(true);
    expect(isRetryable(new APIConnectionTimeoutError())).toBe(false);
    expect(isRetryable(new Error("bug"))).toBe(false);
  });

  it("reads retry-after-ms, retry-after seconds and retry-after dates", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "250" }))).toBe(250);
    expect(retryAfterMs(new Headers({ "retry-after": "2" }))).toBe(2000);
    const date = retryAfterMs(
      new Headers({ "retry-after": new Date(Date.now() + 60_000).toUTCString() }),
    );
    expect(date).toBeGreaterThan(50_000);
    expect(retryAfterMs(new Headers({ "retry-after": "soon" }))).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });

  it("backs off exponentially with jitter, capped", () => {
    for (const [retry, step] of [
      [0, 100],
      [1, 200],
      [2, 400],
      [5, 1000],
    ] as const) {
      const delay = backoffMs(retry, policy);
      expect(delay).toBeGreaterThanOrEqual(step / 2);
      expect(delay).toBeLessThanOrEqual(step);
    }
  });

  it("prefers the provider's retry-after and stops after the last retry", () => {
    expect(retryDelay(status(429, { "retry-after": "1" }), 0, policy)).toBe(1000);
    expect(retryDelay(status(500), 3, policy)).toBeUndefined();
    expect(retryDelay(status(400), 0, policy)).toBeUndefined();
  });
});
