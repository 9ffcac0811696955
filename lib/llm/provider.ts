import OpenAI from "openai";
import type { Provider } from "./call.js";
import { LlmClient } from "./client.js";
import { type BatchLimits, Embedder } from "./embeddings.js";
import type { RetryPolicy } from "./retry.js";
import { KeyUnavailableError } from "./sdk-errors.js";
import type { KeyProvider, LlmSettings } from "./settings.js";

export interface Llm {
  chat: LlmClient;
  /** Present only when a key and `EMBEDDING_MODEL` are configured: hybrid retrieval is on. */
  embedder: Embedder | undefined;
}

/** Retry timing; the attempt count comes from LLM_MAX_RETRIES. */
const RETRY_TIMING = { baseDelayMs: 500, maxDelayMs: 8000 };

export interface LlmTuning {
  /** Tests shorten backoffs; production keeps the defaults. */
  retry?: Partial<RetryPolicy>;
  /** For providers with smaller embedding limits than OpenAI's. */
  batch?: Partial<BatchLimits>;
}

/**
 * A key read at run time, as the SDK calls it before each request. A failure to read it is the
 * provider being unavailable, not a bug: it leaves as a KeyUnavailableError (a 503).
 */
const runTimeKey = (provider: KeyProvider) => async (): Promise<string> => {
  try {
    return await provider();
  } catch (err) {
    throw new KeyUnavailableError(err);
  }
};

/**
 * The model clients for a configuration, built once per process. Without a key both
 * exist but answer 503 `llm_unavailable` (chat) or are absent (embeddings: search stays lexical).
 */
export function createLlm(settings: LlmSettings, tuning: LlmTuning = {}): Llm {
  const provider: Provider | undefined = settings.apiKey
    ? {
        // Retries are ours (deadline-aware); the SDK's are off.
        openai: new OpenAI({
          apiKey:
            typeof settings.apiKey === "string" ? settings.apiKey : runTimeKey(settings.apiKey),
          baseURL: settings.baseURL,
          maxRetries: 0,
          timeout: settings.timeoutMs,
        }),
        retry: { ...RETRY_TIMING, maxRetries: settings.maxRetries, ...tuning.retry },
        timeoutMs: settings.timeoutMs,
      }
    : undefined;
  return {
    chat: new LlmClient(provider, settings.model, settings.maxOutputTokens),
    embedder:
      provider && settings.embeddingModel
        ? new Embedder(
            provider,
            { model: settings.embeddingModel, dimensions: settings.embeddingDimensions },
            tuning.batch,
          )
        : undefined,
  };
}
