import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  OpenAIError,
} from "openai";
import { DomainError } from "../errors.js";
import { logger } from "../log.js";
import { llmError, upstreamTimeout } from "./errors.js";
import { retryAfterMs } from "./retry.js";

/**
 * The provider key could not be read at run time (lib/compose/llm.ts: the secret). An OpenAIError,
 * so that the SDK passes it on as it is.
 */
export class KeyUnavailableError extends OpenAIError {
  constructor(cause: unknown) {
    super("The language model's key cannot be read", { cause });
    this.name = "KeyUnavailableError";
  }
}

const isAbort = (err: unknown) =>
  err instanceof APIUserAbortError || (err instanceof Error && err.name === "AbortError");

/**
 * A provider failure as a domain error. The provider's own message is logged, never sent: it
 * can name models, deployments or account details. Aborts caused by the caller (not by the
 * deadline) are passed through unchanged, since nobody is waiting for an answer.
 */
export function toLlmError(err: unknown, operation: string, timedOut: boolean): unknown {
  if (err instanceof DomainError) return err;
  if (timedOut && (isAbort(err) || err instanceof APIConnectionTimeoutError)) {
    logger.warn("llm call timed out", { operation });
    return upstreamTimeout();
  }
  if (isAbort(err)) return err;
  if (err instanceof APIConnectionTimeoutError) return upstreamTimeout();
  if (err instanceof KeyUnavailableError) {
    logger.error("llm key unavailable", { operation, error: err.cause });
    return new DomainError("llm_unavailable", "The language model's key cannot be read");
  }
  if (!(err instanceof APIError)) return err;
  logger.warn("llm call failed", { operation, status: err.status, error: err.message });
  if (err instanceof APIConnectionError) {
    return new DomainError("llm_unavailable", "The language model provider cannot be reached");
  }
  const status = err.status ?? 0;
  if (status === 429) {
    const wait = retryAfterMs(err.headers);
    return new DomainError(
      "llm_unavailable",
      "The language model provider is rate limiting this service; try again shortly",
      { retryAfterSeconds: wait === undefined ? undefined : Math.ceil(wait / 1000) },
    );
  }
  if (status >= 500 || status === 401 || status === 403) {
    return new DomainError("llm_unavailable", "The language model provider is not available");
  }
  return llmError("The language model provider rejected the request", { providerStatus: status });
}
