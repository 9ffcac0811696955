import { z } from "zod";
import { logger } from "../log.js";
import type { CallOptions } from "./call.js";
import type { ChatMessage, Completion, LlmClient } from "./client.js";
import { llmError } from "./errors.js";

type JsonSchema = { [keyword: string]: unknown };

/** Keywords every strict-mode server accepts; other constraints become hints in descriptions. */
const STRICT_KEYWORDS = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "description",
  "$ref",
  "$defs",
]);

const HINTS: Record<string, (value: unknown) => string> = {
  minLength: (v) => `at least ${v} characters`,
  maxLength: (v) => `at most ${v} characters`,
  minItems: (v) => `at least ${v} items`,
  maxItems: (v) => `at most ${v} items`,
  minimum: (v) => `at least ${v}`,
  maximum: (v) => `at most ${v}`,
  exclusiveMinimum: (v) => `more than ${v}`,
  exclusiveMaximum: (v) => `less than ${v}`,
  format: (v) => `format: ${v}`,
  pattern: (v) => `matching /${v}/`,
};

const isSchema = (value: unknown): value is JsonSchema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const mapValues = (record: JsonSchema, fn: (value: JsonSchema, key: string) => JsonSchema) =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, fn(v as JsonSchema, k)]));

function nullable(node: JsonSchema): JsonSchema {
  const branches = Array.isArray(node.anyOf) ? (node.anyOf as JsonSchema[]) : undefined;
  const types = Array.isArray(node.type) ? node.type : [node.type];
  if (types.includes("null") || branches?.some((b) => b.type === "null")) return node;
  const { description, ...rest } = node;
  return {
    anyOf: [rest, { type: "null" }],
    ...(description === undefined ? {} : { description }),
  };
}

function strictNode(node: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  const hints: string[] = [];
  for (const [keyword, value] of Object.entries(node)) {
    if (STRICT_KEYWORDS.has(keyword)) out[keyword] = value;
    else if (HINTS[keyword]) hints.push(HINTS[keyword](value));
  }
  if (out.type === "object") {
    if (isSchema(node.additionalProperties) && Object.keys(node.additionalProperties).length > 0) {
      throw new Error("Strict structured output cannot express records (z.record); use an array");
    }
    const properties = isSchema(out.properties) ? out.properties : {};
    const required = new Set(Array.isArray(node.required) ? node.required : []);
    out.properties = mapValues(properties, (p, name) =>
      required.has(name) ? strictNode(p) : nullable(strictNode(p)),
    );
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  if (isSchema(out.items)) out.items = strictNode(out.items);
  if (Array.isArray(out.anyOf)) out.anyOf = (out.anyOf as JsonSchema[]).map(strictNode);
  if (isSchema(out.$defs)) out.$defs = mapValues(out.$defs, strictNode);
  if (hints.length > 0) {
    out.description = [out.description, `(${hints.join("; ")})`].filter(Boolean).join(" ");
  }
  return out;
}

const cache = new WeakMap<z.ZodType, JsonSchema>();

/**
 * A zod schema as a JSON schema that strict structured output accepts (OpenAI's rules, which
 * compatible servers follow): an object at the root, every property required with optional ones
 * made nullable, no additional properties, and only the keywords strict mode supports. Size and
 * format limits are kept as hints in descriptions; zod enforces them when the answer returns.
 */
export function strictJsonSchema(schema: z.ZodType): JsonSchema {
  let strict = cache.get(schema);
  if (!strict) {
    const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "throw" }) as JsonSchema;
    strict = strictNode(json);
    if (strict.type !== "object") throw new Error("A structured answer's schema must be an object");
    cache.set(schema, strict);
  }
  return strict;
}

const valueAt = (root: unknown, path: PropertyKey[]) =>
  path.reduce<unknown>(
    (node, key) =>
      typeof node === "object" && node !== null ? (node as JsonSchema)[key as string] : undefined,
    root,
  );

/**
 * Parses a strict-mode answer, where an absent optional field arrives as `null`: a `null` that
 * the schema refuses is dropped and parsing runs again, so `.optional()` fields read as absent.
 */
export function parseStrict<T extends z.ZodType>(schema: T, value: unknown) {
  let result = schema.safeParse(value);
  for (let round = 0; round < 50 && !result.success; round++) {
    const nulls = result.error.issues.filter((issue) => {
      const parent = valueAt(value, issue.path.slice(0, -1));
      return isSchema(parent) && issue.path.length > 0 && valueAt(value, issue.path) === null;
    });
    if (nulls.length === 0) break;
    for (const issue of nulls) {
      const parent = valueAt(value, issue.path.slice(0, -1)) as JsonSchema;
      delete parent[issue.path.at(-1) as string];
    }
    result = schema.safeParse(value);
  }
  return result;
}

export interface StructuredRequest<T extends z.ZodType> extends CallOptions {
  /** Names the answer for the provider: letters, digits, `_` and `-`, up to 64. */
  name: string;
  schema: T;
  messages: ChatMessage[];
  maxTokens?: number;
}

type Checked<T> = { ok: true; value: T } | { ok: false; problems: string[] };

function check<T extends z.ZodType>(schema: T, completion: Completion): Checked<z.output<T>> {
  const cutOff = completion.finishReason === "length";
  let json: unknown;
  try {
    json = JSON.parse(completion.text);
  } catch {
    return {
      ok: false,
      problems: [
        cutOff
          ? "The answer was cut off at the output limit: answer more briefly"
          : "The answer is not valid JSON",
      ],
    };
  }
  const parsed = parseStrict(schema, json);
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    problems: parsed.error.issues
      .slice(0, 20)
      .map((i) => `${i.path.length > 0 ? i.path.join(".") : "(root)"}: ${i.message}`),
  };
}

const repairPrompt = (problems: string[]) =>
  [
    "Your previous answer does not match the required JSON schema:",
    ...problems.map((p) => `- ${p}`),
    "Answer again with the corrected JSON object only, following the schema exactly.",
  ].join("\n");

/** The longest invalid answer sent back for repair; more only costs tokens. */
const MAX_ECHO_CHARS = 20_000;

/**
 * Asks for an answer in the shape of a zod schema, through `response_format: json_schema` in
 * strict mode, and validates it. An invalid answer gets exactly one repair attempt (the answer
 * and what is wrong with it go back to the model) within the same deadline; a second invalid
 * answer is a 502 `llm_error` listing the problems.
 */
export async function generateObject<T extends z.ZodType>(
  llm: LlmClient,
  request: StructuredRequest<T>,
): Promise<z.output<T>> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(request.name)) {
    throw new Error(`Invalid structured answer name: ${request.name}`);
  }
  const { name, schema, messages, maxTokens, signal } = request;
  const jsonSchema = { name, schema: strictJsonSchema(schema) };
  const options = {
    deadline: request.deadline ?? Date.now() + llm.timeoutMs,
    operation: request.operation ?? `structured.${name}`,
    ...(signal ? { signal } : {}),
    ...(maxTokens === undefined ? {} : { maxTokens }),
    jsonSchema,
  };
  const first = await llm.complete(messages, options);
  if (first.refusal)
    throw llmError("The language model declined to answer", { refusal: first.refusal });
  const checked = check(schema, first);
  if (checked.ok) return checked.value;

  logger.warn("structured answer invalid; asking once for a repair", {
    operation: options.operation,
    problems: checked.problems,
  });
  const repair = await llm.complete(
    [
      ...messages,
      { role: "assistant", content: first.text.slice(0, MAX_ECHO_CHARS) },
      { role: "user", content: repairPrompt(checked.problems) },
    ],
    { ...options, operation: `${options.operation}.repair` },
  );
  if (repair.refusal)
    throw llmError("The language model declined to answer", { refusal: repair.refusal });
  const repaired = check(schema, repair);
  if (repaired.ok) return repaired.value;
  throw llmError("The language model's answer did not match the expected structure", {
    issues: repaired.problems,
  });
}
