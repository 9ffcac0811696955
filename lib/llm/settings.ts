import { z } from "zod";

/** An unset variable and one set to "" mean the same: not configured. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess(
    (v) => (typeof v === "string" && v.trim() === "" ? undefined : v),
    schema.optional(),
  );

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/**
 * The model provider's environment. Any OpenAI-compatible server works (OpenAI, Azure OpenAI's v1
 * endpoint, vLLM, Ollama, LM Studio): point `OPENAI_BASE_URL` at it. Its shape is meant to be
 * spread into the service's config schema (`...llmEnv.shape`).
 */
export const llmEnv = z.object({
  /** Without a key every model feature answers 503 `llm_unavailable`; the rest keeps working. */
  OPENAI_API_KEY: optional(z.string().trim()),
  /**
   * On AWS: the Secrets Manager secret (name or ARN) whose string is the key, read at run time
   * instead of OPENAI_API_KEY (lib/compose/llm.ts), so no function's environment holds the key.
   */
  LLM_API_KEY_SECRET: optional(z.string().trim().min(1)),
  /** How long a key read from the secret is used before it is read again: a rotation's delay. */
  LLM_API_KEY_CACHE_SECONDS: positiveInt(300),
  OPENAI_BASE_URL: optional(z.url({ protocol: /^https?$/ })),
  LLM_MODEL: z.string().trim().min(1).default("gpt-4o-mini"),
  /** Hybrid retrieval is on only when this is set (and a key is). */
  EMBEDDING_MODEL: optional(z.string().trim().min(1)),
  /** Shortened embeddings (text-embedding-3 models); unset sends no `dimensions` at all. */
  EMBEDDING_DIMENSIONS: optional(z.coerce.number().int().min(8).max(8192)),
  /** Cosine similarity below which a chunk is not a vector match; depends on the embedding model. */
  EMBEDDING_MIN_SIMILARITY: z.coerce.number().min(-1).max(1).default(0.3),
  /** Budget of one model operation, retries and repair included; below API Gateway's 29 s. */
  LLM_TIMEOUT_MS: positiveInt(20_000),
  /** Retries of a call answered 429, 5xx or not at all. */
  LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /** Upper bound of the tokens a model may write in one answer. */
  LLM_MAX_OUTPUT_TOKENS: positiveInt(2000),
});

export type LlmEnv = z.infer<typeof llmEnv>;

/** Reads the provider key at run time (before each request; cache it), e.g. from a secret. */
export type KeyProvider = () => Promise<string>;

export interface LlmSettings {
  /** The key itself, or how to read it at run time; none turns model features off. */
  apiKey: string | KeyProvider | undefined;
  baseURL: string | undefined;
  model: string;
  embeddingModel: string | undefined;
  embeddingDimensions: number | undefined;
  embeddingMinSimilarity: number;
  timeoutMs: number;
  maxRetries: number;
  maxOutputTokens: number;
}

export function toLlmSettings(env: LlmEnv): LlmSettings {
  return {
    apiKey: env.OPENAI_API_KEY,
    baseURL: env.OPENAI_BASE_URL,
    model: env.LLM_MODEL,
    embeddingModel: env.EMBEDDING_MODEL,
    embeddingDimensions: env.EMBEDDING_DIMENSIONS,
    embeddingMinSimilarity: env.EMBEDDING_MIN_SIMILARITY,
    timeoutMs: env.LLM_TIMEOUT_MS,
    maxRetries: env.LLM_MAX_RETRIES,
    maxOutputTokens: env.LLM_MAX_OUTPUT_TOKENS,
  };
}

/** Reads and validates the model settings; a bad value fails at cold start with a clear message. */
export function loadLlmSettings(env: NodeJS.ProcessEnv = process.env): LlmSettings {
  const parsed = llmEnv.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration: ${problems.join("; ")}`);
  }
  return toLlmSettings(parsed.data);
}
