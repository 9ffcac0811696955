import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { Stream } from "openai/streaming";
import { DomainError } from "../errors.js";
import { logger } from "../log.js";
import {
  Budget,
  type CallOptions,
  logUsage,
  type Provider,
  sendWithRetries,
  type Usage,
} from "./call.js";
import { llmError, llmUnavailable, upstreamTimeout } from "./errors.js";
import { toLlmError } from "./sdk-errors.js";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface CompleteOptions extends CallOptions {
  /** Output tokens allowed for this answer; never more than LLM_MAX_OUTPUT_TOKENS. */
  maxTokens?: number;
  /** The answer's format: a strict JSON schema (built by `strictJsonSchema`), or any JSON object. */
  responseFormat?: ResponseFormat;
}

export type ResponseFormat =
  | { type: "json_schema"; name: string; schema: Record<string, unknown> }
  | { type: "json_object" };

export interface Completion {
  text: string;
  /** "length" when the answer was cut off at the token limit. */
  finishReason: string | null;
  /** Why the model declined to answer, when it did. */
  refusal: string | null;
}

const responseFormatOf = (format: ResponseFormat) =>
  format.type === "json_object"
    ? { type: "json_object" as const }
    : {
        type: "json_schema" as const,
        json_schema: { name: format.name, schema: format.schema, strict: true },
      };

/**
 * Chat Completions against any OpenAI-compatible server. Without a provider (no API key) it still
 * exists, so services can be built unconditionally, but every call answers 503 `llm_unavailable`.
 */
export class LlmClient {
  constructor(
    private readonly provider: Provider | undefined,
    readonly model: string,
    private readonly maxOutputTokens: number,
  ) {}

  get available(): boolean {
    return this.provider !== undefined;
  }

  /** The budget an operation gets when its caller sets no deadline. */
  get timeoutMs(): number {
    return this.provider?.timeoutMs ?? 0;
  }

  async complete(messages: ChatMessage[], options: CompleteOptions = {}): Promise<Completion> {
    const provider = this.require();
    const operation = options.operation ?? "chat";
    const budget = new Budget(provider.timeoutMs, options);
    const started = performance.now();
    const format = options.responseFormat;
    const { value: res, attempts } = await sendWithRetries(provider, budget, operation, (request) =>
      provider.openai.chat.completions.create(
        {
          model: this.model,
          messages,
          max_completion_tokens: this.tokens(options.maxTokens),
          ...(format ? { response_format: responseFormatOf(format) } : {}),
        },
        request,
      ),
    );
    const choice = res.choices[0];
    logUsage(operation, this.model, started, attempts, res.usage, {
      finishReason: choice?.finish_reason,
    });
    if (!choice) throw llmError("The language model returned no answer");
    return {
      text: choice.message.content ?? "",
      finishReason: choice.finish_reason ?? null,
      refusal: choice.message.refusal ?? null,
    };
  }

  /**
   * Streams an answer as text deltas. Resolves once the provider has accepted the request, so
   * rate limits and outages still surface as errors before anything is streamed; failures while
   * streaming are thrown by the iterator. Stopping the iteration early cancels the request.
   */
  async stream(
    messages: ChatMessage[],
    options: CompleteOptions = {},
  ): Promise<AsyncIterable<string>> {
    const provider = this.require();
    const operation = options.operation ?? "chat.stream";
    const budget = new Budget(provider.timeoutMs, options);
    const started = performance.now();
    const { value: stream, attempts } = await sendWithRetries(
      provider,
      budget,
      operation,
      (request) =>
        provider.openai.chat.completions.create(
          {
            model: this.model,
            messages,
            max_completion_tokens: this.tokens(options.maxTokens),
            stream: true,
            stream_options: { include_usage: true },
          },
          request,
        ),
    );
    const log = (usage: Usage | undefined, extra: Record<string, unknown>) =>
      logUsage(operation, this.model, started, attempts, usage, { streamed: true, ...extra });
    return deltas(stream, budget, operation, log);
  }

  private tokens(asked: number | undefined): number {
    return Math.min(asked ?? this.maxOutputTokens, this.maxOutputTokens);
  }

  private require(): Provider {
    if (!this.provider) throw llmUnavailable();
    return this.provider;
  }
}

/**
 * The SDK ends a stream silently when it is aborted, and a dropped connection surfaces as a
 * plain fetch error, so both are judged here: past the deadline a 504; otherwise, unless the
 * caller itself gave up, the provider broke off (503).
 */
async function* deltas(
  stream: Stream<ChatCompletionChunk>,
  budget: Budget,
  operation: string,
  log: (usage: Usage | undefined, extra: Record<string, unknown>) => void,
): AsyncGenerator<string> {
  let usage: Usage | undefined;
  let finishReason: string | null = null;
  try {
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      if (choice?.delta?.content) yield choice.delta.content;
    }
  } catch (err) {
    const mapped = toLlmError(err, operation, budget.timedOut);
    if (mapped !== err || budget.signal.aborted) throw mapped;
    logger.warn("llm stream interrupted", { operation, error: err });
    throw interrupted();
  } finally {
    if (!finishReason) stream.controller.abort();
    log(usage, { finishReason });
  }
  if (finishReason) return;
  if (budget.timedOut) throw upstreamTimeout();
  if (budget.signal.aborted) return;
  logger.warn("llm stream ended without finishing", { operation });
  throw interrupted();
}

const interrupted = () =>
  new DomainError("llm_unavailable", "The language model's answer was interrupted; try again");
