import { createHash } from "node:crypto";
import { mapLimit } from "../async.js";
import { Budget, type CallOptions, logUsage, type Provider, sendWithRetries } from "./call.js";
import { llmError } from "./errors.js";

/** Vectors are comparable only within one space: the same model asked for the same dimensions. */
export interface EmbeddingSpace {
  model: string;
  /** The `dimensions` asked for; undefined means the model's native size. */
  dimensions: number | undefined;
}

/** A short, key-safe name of a space; a different model or size always gives a different tag. */
export function spaceTag(space: EmbeddingSpace): string {
  const readable = space.model.replace(/[^A-Za-z0-9.-]+/g, "_").slice(0, 48);
  const digest = createHash("sha256").update(space.model).digest("hex").slice(0, 8);
  return `${readable}-${space.dimensions ?? "native"}-${digest}`;
}

export interface BatchLimits {
  /** Inputs per request (OpenAI allows 2048; some compatible servers far fewer). */
  maxItems: number;
  /** Characters per request, keeping well inside OpenAI's 300k tokens per request. */
  maxChars: number;
  /** Characters embedded of one input: inputs are capped at 8192 tokens, 6000 characters fit in any script. */
  maxInputChars: number;
  /** Requests in flight at once. */
  concurrency: number;
}

const DEFAULT_LIMITS: BatchLimits = {
  maxItems: 128,
  maxChars: 120_000,
  maxInputChars: 6000,
  concurrency: 2,
};

/** Consecutive runs of inputs, each within the item and character limits. */
export function batches(texts: string[], limits: BatchLimits): string[][] {
  const result: string[][] = [];
  let current: string[] = [];
  let chars = 0;
  for (const text of texts) {
    if (
      current.length > 0 &&
      (current.length >= limits.maxItems || chars + text.length > limits.maxChars)
    ) {
      result.push(current);
      current = [];
      chars = 0;
    }
    current.push(text);
    chars += text.length;
  }
  if (current.length > 0) result.push(current);
  return result;
}

/** Scales a vector to unit length in place, so cosine similarity is a dot product. */
export function normalize(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const x of vector) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) / norm;
  return vector;
}

/** Turns texts into unit-length vectors of one embedding space, batched within provider limits. */
export class Embedder {
  private readonly limits: BatchLimits;

  constructor(
    private readonly provider: Provider,
    readonly space: EmbeddingSpace,
    limits: Partial<BatchLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /**
   * One vector per text, in order. A deadline, when given, covers every batch (a search's query);
   * without one each request gets LLM_TIMEOUT_MS, so indexing a large source is not cut short.
   */
  async embed(texts: string[], options: CallOptions = {}): Promise<Float32Array[]> {
    // The API rejects empty inputs; a lone space embeds as "nothing".
    const inputs = texts.map((t) => t.slice(0, this.limits.maxInputChars).trim() || " ");
    const runs = batches(inputs, this.limits);
    const shared = options.deadline === undefined ? undefined : new Budget(0, options);
    const vectors = await mapLimit(runs, this.limits.concurrency, (run) =>
      this.embedBatch(
        run,
        shared ?? new Budget(this.provider.timeoutMs, options),
        options.operation ?? "embeddings",
      ),
    );
    return vectors.flat();
  }

  private async embedBatch(
    inputs: string[],
    budget: Budget,
    operation: string,
  ): Promise<Float32Array[]> {
    const { model, dimensions } = this.space;
    const started = performance.now();
    const { value: res, attempts } = await sendWithRetries(
      this.provider,
      budget,
      operation,
      (request) =>
        this.provider.openai.embeddings.create(
          {
            model,
            input: inputs,
            // Floats, not the SDK's default base64: not every compatible server speaks base64.
            encoding_format: "float",
            ...(dimensions === undefined ? {} : { dimensions }),
          },
          request,
        ),
    );
    logUsage(operation, model, started, attempts, res.usage, { inputs: inputs.length });
    const rows = [...res.data].sort((a, b) => a.index - b.index);
    const size = rows[0]?.embedding.length ?? 0;
    const valid =
      rows.length === inputs.length &&
      size > 0 &&
      (dimensions === undefined || size === dimensions) &&
      rows.every((row) => row.embedding.length === size && row.embedding.every(Number.isFinite));
    if (!valid) throw llmError("The embedding model returned vectors that do not fit the request");
    return rows.map((row) => normalize(Float32Array.from(row.embedding)));
  }
}
