import type { z } from "zod";
import { isDomainError } from "../errors.js";
import { logger } from "../log.js";
import type { CallOptions } from "./call.js";
import type { ChatMessage, Completion, LlmClient, ResponseFormat } from "./client.js";
import { llmError } from "./errors.js";
import { extractJson } from "./extract-json.js";
import { type Conformed, conform, type Fitted } from "./soft-limits.js";
import { type JsonSchema, strictJsonSchema } from "./strict-mode.js";

export interface StructuredRequest<T extends z.ZodType> extends CallOptions {
  /** Names the answer for the provider: letters, digits, `_` and `-`, up to 64. */
  name: string;
  schema: T;
  messages: ChatMessage[];
  maxTokens?: number;
}

/**
 * How an answer's format is asked for, most precise first: a strict JSON schema; any JSON object
 * with the schema in the prompt (servers without `json_schema`); the schema in the prompt only
 * (servers without `response_format`, or that ignore it).
 */
export type StructuredMode = "json_schema" | "json_object" | "prompt";

const MODES: StructuredMode[] = ["json_schema", "json_object", "prompt"];

/** What each client's server was found to support, so later answers skip what it refused. */
const modeOf = new WeakMap<LlmClient, StructuredMode>();

/** Statuses with which a server refuses a `response_format` it does not support. */
const refusesFormat = (err: unknown) =>
  isDomainError(err, "llm_error") &&
  [400, 422].includes(
    (err.details as { providerStatus?: number } | undefined)?.providerStatus ?? 0,
  );

const schemaInstructions = (schema: JsonSchema) =>
  [
    "Answer with one JSON object only, no prose before or after it, that follows this JSON schema:",
    "```json",
    JSON.stringify(schema),
    "```",
  ].join("\n");

function check<T extends z.ZodType>(
  schema: T,
  completion: Completion,
): Fitted<z.output<T>> & { wrapped: boolean } {
  const found = extractJson(completion.text);
  if (!found) {
    const problem =
      completion.finishReason === "length"
        ? "The answer was cut off at the output limit: answer more briefly"
        : "The answer is not valid JSON";
    return { ok: false, problems: [problem], wrapped: false };
  }
  return { ...conform(schema, found.json), wrapped: found.wrapped };
}

const repairPrompt = (problems: string[], schema: JsonSchema) =>
  [
    "Your previous answer does not match the required JSON schema:",
    ...problems.map((p) => `- ${p}`),
    "Answer again with the corrected JSON object only, following the schema exactly:",
    "```json",
    JSON.stringify(schema),
    "```",
  ].join("\n");

/** The longest invalid answer sent back for repair; more only costs tokens. */
const MAX_ECHO_CHARS = 20_000;

/**
 * Asks for an answer in the shape of a zod schema and validates it, with any OpenAI-compatible
 * server: through `response_format: json_schema` in strict mode; where the server refuses that
 * (400 or 422), through `json_object` with the schema in the prompt; where it refuses that too, or
 * answers JSON wrapped in prose (it ignores `response_format`), with the schema in the prompt and
 * the JSON taken out of the prose. What a client's server supports is remembered.
 *
 * Limits (minimum and maximum counts and lengths) are soft: an answer of the right shape is kept,
 * cut where it exceeds a maximum, and `warnings` says what fell short. An answer of the wrong
 * shape gets exactly one repair attempt (the answer, what is wrong and the schema go back to the
 * model) within the same deadline; a second one is a 502 `llm_error` listing the problems.
 */
export async function generateObject<T extends z.ZodType>(
  llm: LlmClient,
  request: StructuredRequest<T>,
): Promise<Conformed<z.output<T>>> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(request.name)) {
    throw new Error(`Invalid structured answer name: ${request.name}`);
  }
  const { name, schema, messages, maxTokens, signal } = request;
  const strict = strictJsonSchema(schema);
  const options = {
    deadline: request.deadline ?? Date.now() + llm.timeoutMs,
    operation: request.operation ?? `structured.${name}`,
    ...(signal ? { signal } : {}),
    ...(maxTokens === undefined ? {} : { maxTokens }),
  };
  const formats: Record<StructuredMode, ResponseFormat | undefined> = {
    json_schema: { type: "json_schema", name, schema: strict },
    json_object: { type: "json_object" },
    prompt: undefined,
  };
  const ask = async (conversation: ChatMessage[], operation: string) => {
    for (let i = MODES.indexOf(modeOf.get(llm) ?? "json_schema"); ; i++) {
      const mode = MODES[i] as StructuredMode;
      const format = formats[mode];
      const sent = mode === "json_schema" ? conversation : withSchema(conversation, strict);
      try {
        const completion = await llm.complete(sent, {
          ...options,
          operation,
          ...(format ? { responseFormat: format } : {}),
        });
        if (mode !== "json_schema") modeOf.set(llm, mode);
        return completion;
      } catch (err) {
        if (i + 1 >= MODES.length || !refusesFormat(err)) throw err;
        logger.warn("structured output format refused; trying the next one", { operation, mode });
      }
    }
  };

  const first = await ask(messages, options.operation);
  if (first.refusal)
    throw llmError("The language model declined to answer", { refusal: first.refusal });
  const checked = check(schema, first);
  // JSON dug out of prose: the server ignores the format, so the schema goes in the prompt.
  if (checked.wrapped && (modeOf.get(llm) ?? "json_schema") === "json_schema") {
    modeOf.set(llm, "prompt");
  }
  if (checked.ok) return { value: checked.value, warnings: checked.warnings };

  logger.warn("structured answer invalid; asking once for a repair", {
    operation: options.operation,
    problems: checked.problems,
  });
  const repair = await ask(
    [
      ...messages,
      { role: "assistant", content: first.text.slice(0, MAX_ECHO_CHARS) },
      { role: "user", content: repairPrompt(checked.problems, strict) },
    ],
    `${options.operation}.repair`,
  );
  if (repair.refusal)
    throw llmError("The language model declined to answer", { refusal: repair.refusal });
  const repaired = check(schema, repair);
  if (repaired.ok) return { value: repaired.value, warnings: repaired.warnings };
  throw llmError("The language model's answer did not match the expected structure", {
    issues: repaired.problems,
  });
}

/** The conversation with the schema added to its system message (or as one, when it has none). */
function withSchema(messages: ChatMessage[], schema: JsonSchema): ChatMessage[] {
  const [first, ...rest] = messages;
  if (first?.role === "system") {
    return [
      { role: "system", content: `${first.content}\n\n${schemaInstructions(schema)}` },
      ...rest,
    ];
  }
  return [{ role: "system", content: schemaInstructions(schema) }, ...messages];
}
