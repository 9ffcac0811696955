import { setTimeout as sleep } from "node:timers/promises";
import type OpenAI from "openai";
import { APIError } from "openai";
import { logger } from "../log.js";
import { count } from "../metrics.js";
import { traced } from "../tracing.js";
import { type RetryPolicy, retryDelay } from "./retry.js";
import { toLlmError } from "./sdk-errors.js";

export interface CallOptions {
  /** Epoch milliseconds by which the whole operation must end; defaults to now + LLM_TIMEOUT_MS. */
  deadline?: number;
  /** Aborts the operation, e.g. when the HTTP client has gone away. */
  signal?: AbortSignal;
  /** Names the operation in logs, e.g. "chat" or "intel.persona". */
  operation?: string;
}

/** The provider connection the chat client and the embedder share. */
export interface Provider {
  openai: OpenAI;
  retry: RetryPolicy;
  timeoutMs: number;
}

/**
 * One operation's time budget. Its signal aborts at the deadline or when the caller aborts, and
 * covers reading a response body too (the SDK's own timeout stops at the response headers).
 */
export class Budget {
  readonly deadline: number;
  readonly signal: AbortSignal;
  private readonly timer: AbortSignal;

  constructor(defaultMs: number, options: CallOptions) {
    this.deadline = options.deadline ?? Date.now() + defaultMs;
    this.timer = AbortSignal.timeout(this.remainingMs());
    this.signal = options.signal ? AbortSignal.any([this.timer, options.signal]) : this.timer;
  }

  get timedOut(): boolean {
    return this.timer.aborted;
  }

  remainingMs(): number {
    return Math.max(1, this.deadline - Date.now());
  }
}

export interface Sent<T> {
  value: T;
  attempts: number;
}

/**
 * Sends a request until it succeeds, fails for good, runs out of retries, or the next wait would
 * pass the deadline (a `retry-after` longer than the budget ends it at once). Failures leave as
 * the API's errors. The whole operation, retries included, is one `llm` subsegment of the trace.
 */
export function sendWithRetries<T>(
  provider: Provider,
  budget: Budget,
  operation: string,
  send: (request: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<Sent<T>> {
  return traced("llm", { operation }, () => attempts(provider, budget, operation, send));
}

async function attempts<T>(
  provider: Provider,
  budget: Budget,
  operation: string,
  send: (request: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<Sent<T>> {
  for (let retry = 0; ; retry++) {
    try {
      const value = await send({ signal: budget.signal, timeout: budget.remainingMs() });
      return { value, attempts: retry + 1 };
    } catch (err) {
      const wait = retryDelay(err, retry, provider.retry);
      if (wait === undefined || budget.timedOut || Date.now() + wait >= budget.deadline) {
        throw toLlmError(err, operation, budget.timedOut);
      }
      logger.info("llm call retried", {
        operation,
        retry: retry + 1,
        waitMs: Math.round(wait),
        status: err instanceof APIError ? err.status : undefined,
      });
      try {
        await sleep(wait, undefined, { signal: budget.signal });
      } catch (aborted) {
        throw toLlmError(aborted, operation, budget.timedOut);
      }
    }
  }
}

export interface Usage {
  prompt_tokens?: number | undefined;
  completion_tokens?: number | undefined;
  total_tokens?: number | undefined;
}

/** One log line per model operation, what it cost and how long it took; and its metrics. */
export function logUsage(
  operation: string,
  model: string,
  started: number,
  attempts: number,
  usage: Usage | null | undefined,
  extra: Record<string, unknown> = {},
): void {
  count("ModelCalls");
  count("ModelTokens", usage?.total_tokens ?? 0);
  logger.info("llm usage", {
    operation,
    model,
    attempts,
    durationMs: Math.round(performance.now() - started),
    promptTokens: usage?.prompt_tokens,
    completionTokens: usage?.completion_tokens,
    totalTokens: usage?.total_tokens,
    ...extra,
  });
}
