import { z } from "zod";
import { isDomainError } from "../errors.js";
import { logger } from "../log.js";
import type { CallOptions } from "./call.js";
import type { ChatMessage, Completion, LlmClient, ResponseFormat } from "./client.js";
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

/** Checks that bound a size or a value: soft in an answer (kept, trimmed or reported). */
const SOFT_CHECKS = new Set([
  "min_length",
  "max_length",
  "length_equals",
  "min_size",
  "max_size",
  "size_equals",
  "greater_than",
  "less_than",
]);

type Def = {
  type: string;
  checks?: Array<{ _zod: { def: { check: string } } }>;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
  options?: z.ZodType[];
};

const relaxedCache = new WeakMap<z.ZodType, z.ZodType>();

/**
 * The same schema without its size and range checks: the shape an answer must have. Objects,
 * arrays, optionals, nullables and unions are rebuilt around relaxed parts; types, enums, formats
 * (an integer stays an integer) and required fields stay as they are.
 */
export function relaxed<T extends z.ZodType>(schema: T): T {
  const cached = relaxedCache.get(schema);
  if (cached) return cached as T;
  const def = schema._zod.def as unknown as Def;
  const next: Def = { ...def };
  if (def.checks) next.checks = def.checks.filter((c) => !SOFT_CHECKS.has(c._zod.def.check));
  if (def.type === "object" && def.shape) {
    next.shape = Object.fromEntries(Object.entries(def.shape).map(([k, v]) => [k, relaxed(v)]));
  }
  if (def.element) next.element = relaxed(def.element);
  if (def.innerType) next.innerType = relaxed(def.innerType);
  if (def.options) next.options = def.options.map(relaxed);
  const clone = schema.clone(next as unknown as T["_zod"]["def"]);
  // Descriptions stay (they are registry metadata, not part of the definition).
  const meta = schema.meta();
  const result = meta ? (clone.meta(meta) as T) : clone;
  relaxedCache.set(schema, result);
  return result;
}

/** An answer that has the schema's shape, with what fell short of its soft limits. */
export interface Conformed<T> {
  value: T;
  /** Soft limits the answer did not meet, e.g. "pillars: 2 items, at least 3 asked". */
  warnings: string[];
}

type Fitted<T> = ({ ok: true } & Conformed<T>) | { ok: false; problems: string[] };

const pathOf = (path: PropertyKey[]) => (path.length > 0 ? path.join(".") : "(root)");

/** Cuts the value at `path` to `max` items, characters or less; answers whether it could. */
function trim(root: unknown, path: PropertyKey[], max: number): boolean {
  const parent = valueAt(root, path.slice(0, -1));
  const key = path.at(-1);
  if (typeof parent !== "object" || parent === null || key === undefined) return false;
  const holder = parent as Record<PropertyKey, unknown>;
  const value = holder[key];
  if (typeof value === "string" || Array.isArray(value)) holder[key] = value.slice(0, max);
  else if (typeof value === "number") holder[key] = max;
  else return false;
  return true;
}

/**
 * Fits a parsed answer to a schema whose limits are soft: an answer of the right shape is kept,
 * whatever exceeds a maximum is cut to it (lists, texts, numbers), and what falls short of a
 * minimum stays as it is with a warning (numbers below their minimum are raised to it). Only an
 * answer of the wrong shape (missing fields, wrong types, unknown enum values) is a problem.
 */
export function conform<T extends z.ZodType>(schema: T, json: unknown): Fitted<z.output<T>> {
  const shaped = parseStrict(relaxed(schema), json);
  if (!shaped.success) {
    return {
      ok: false,
      problems: shaped.error.issues.slice(0, 20).map((i) => `${pathOf(i.path)}: ${i.message}`),
    };
  }
  const value = shaped.data;
  const warnings: string[] = [];
  // Each round cuts what the last parse found too big; cutting may reveal nothing new.
  for (let round = 0; round < 5; round++) {
    const checked = schema.safeParse(value);
    if (checked.success) return { ok: true, value: checked.data, warnings };
    let cut = false;
    for (const issue of checked.error.issues) {
      const where = pathOf(issue.path);
      if (issue.code === "too_big" && trim(value, issue.path, Number(issue.maximum))) {
        warnings.push(`${where}: cut to ${issue.maximum} ${unit(issue.origin)}`);
        cut = true;
      } else if (issue.code === "too_small" && issue.origin === "number") {
        trim(value, issue.path, Number(issue.minimum));
        warnings.push(`${where}: raised to ${issue.minimum}`);
        cut = true;
      } else if (issue.code === "too_small") {
        const has = (valueAt(value, issue.path) as { length?: number } | undefined)?.length ?? 0;
        const warning = `${where}: ${has} ${unit(issue.origin)}, ${issue.exact ? "exactly" : "at least"} ${issue.minimum} asked`;
        if (!warnings.includes(warning)) warnings.push(warning);
      }
    }
    if (!cut) break;
  }
  return { ok: true, value, warnings };
}

const unit = (origin: string) =>
  origin === "array" ? "items" : origin === "string" ? "characters" : "";

/**
 * The JSON object in a model's answer: the whole text, else a fenced ```json block, else the span
 * from the first `{` to the last `}` (servers that ignore `response_format` wrap JSON in prose).
 * Answers whether it had to be dug out, which tells that the server ignored the format.
 */
export function extractJson(text: string): { json: unknown; wrapped: boolean } | undefined {
  const attempts: string[] = [text];
  const fence = text.indexOf("```");
  if (fence >= 0) {
    const start = text.indexOf("\n", fence);
    const end = start < 0 ? -1 : text.indexOf("```", start);
    if (end > start) attempts.push(text.slice(start + 1, end));
  }
  const open = text.indexOf("{");
  const close = text.lastIndexOf("}");
  if (open >= 0 && close > open) attempts.push(text.slice(open, close + 1));
  for (const [i, candidate] of attempts.entries()) {
    try {
      return { json: JSON.parse(candidate), wrapped: i > 0 };
    } catch {
      // the next way of finding it
    }
  }
  return undefined;
}

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

type Checked<T> = ({ ok: true } & Conformed<T>) | { ok: false; problems: string[] };

function check<T extends z.ZodType>(
  schema: T,
  completion: Completion,
): Checked<z.output<T>> & { wrapped: boolean } {
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
