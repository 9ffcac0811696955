import { z } from "@hono/zod-openapi";
import { BUILT_IN_KEYS, type MetadataValue } from "../sources/attributes.js";
import { SOURCE_TYPES } from "../sources/fields.js";
import { DIRECT_HOLDER, holdersOf, type SourceItem } from "../sources/records.js";

/**
 * Filter expressions over sources, in the shape of OpenAI's file search filters so clients know
 * it already: a comparison `{type, key, value}` or a compound `{type: "and"|"or", filters}`.
 * Keys are a source's `metadata` keys and its built-in fields. An expression is evaluated over
 * the workspace's source records (see `IndexRetriever`), never over hits, so it narrows what the
 * engine ranks instead of what a top-k cut left.
 */

export const COMPARISONS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"] as const;
export const COMPOUNDS = ["and", "or"] as const;
type ComparisonType = (typeof COMPARISONS)[number];

export type Scalar = string | number | boolean;

export interface Comparison {
  type: ComparisonType;
  key: string;
  value: Scalar | Array<string | number>;
}

export interface Compound {
  type: (typeof COMPOUNDS)[number];
  filters: FilterExpression[];
}

export type FilterExpression = Comparison | Compound;

/** Compounds nest this deep at most, and an expression holds at most this many comparisons. */
export const MAX_FILTER_DEPTH = 5;
export const MAX_COMPARISONS = 64;
export const MAX_IN_VALUES = 100;

const RANGE = new Set<string>(["gt", "gte", "lt", "lte"]);
const LISTS = new Set<string>(["in", "nin"]);
const DATES = new Set<string>(["created_at", "indexed_at"]);

type Issue = { path: Array<string | number>; message: string };

const isScalar = (value: unknown): value is Scalar =>
  typeof value === "string" || typeof value === "boolean" || Number.isFinite(value);

/** A date as a built-in date field compares it: an ISO 8601 string, or Unix seconds. */
const dateMillis = (value: unknown): number | undefined => {
  if (typeof value === "number" && Number.isFinite(value)) return value * 1000;
  if (typeof value !== "string") return undefined;
  const millis = Date.parse(value);
  return Number.isFinite(millis) ? millis : undefined;
};

/** What a built-in key accepts as a value (one value, or each value of an `in` list). */
function builtInProblem(key: string, op: string, value: unknown): string | undefined {
  if (DATES.has(key)) {
    return dateMillis(value) === undefined
      ? `\`${key}\` compares with a date: an ISO 8601 string or Unix seconds`
      : undefined;
  }
  if (RANGE.has(op)) return `\`${op}\` does not apply to \`${key}\`, which is not a date`;
  if (typeof value !== "string") return `\`${key}\` compares with a string`;
  if (key === "type" && !(SOURCE_TYPES as readonly string[]).includes(value)) {
    return `\`type\` is one of ${SOURCE_TYPES.join(", ")}`;
  }
  return undefined;
}

/** Checks one comparison's operator, key and value; a problem names what is wrong. */
function checkComparison(node: Record<string, unknown>, path: Issue["path"], issues: Issue[]) {
  const { type: op, key, value } = node;
  const unknownField = Object.keys(node).find((k) => k !== "type" && k !== "key" && k !== "value");
  if (unknownField) {
    issues.push({ path: [...path, unknownField], message: `Unknown field \`${unknownField}\`` });
  }
  if (typeof key !== "string" || key.length === 0 || key.length > 64) {
    issues.push({ path: [...path, "key"], message: "`key` is a metadata key or a built-in field" });
    return;
  }
  const builtIn = (BUILT_IN_KEYS as readonly string[]).includes(key);
  const at = [...path, "value"];
  if (LISTS.has(op as string)) {
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IN_VALUES) {
      issues.push({
        path: at,
        message: `\`${op}\` takes a list of 1 to ${MAX_IN_VALUES} strings or numbers`,
      });
      return;
    }
    for (const [i, item] of value.entries()) {
      const problem =
        typeof item !== "string" && !Number.isFinite(item)
          ? `\`${op}\` takes strings or numbers`
          : builtIn
            ? builtInProblem(key, "eq", item)
            : undefined;
      if (problem) issues.push({ path: [...at, i], message: problem });
    }
    return;
  }
  if (!isScalar(value)) {
    issues.push({ path: at, message: `\`${op}\` takes one string, number or boolean` });
    return;
  }
  if (RANGE.has(op as string) && typeof value === "boolean") {
    issues.push({
      path: at,
      message: `\`${op}\` compares numbers, dates or strings, not a boolean`,
    });
    return;
  }
  const problem = builtIn ? builtInProblem(key, op as string, value) : undefined;
  if (problem) issues.push({ path: at, message: problem });
}

/** Walks an expression, counting comparisons, and collects every problem with its path. */
function check(node: unknown): Issue[] {
  const issues: Issue[] = [];
  const seen = { comparisons: 0 };
  const visit = (value: unknown, at: Issue["path"], level: number) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      issues.push({ path: at, message: "A filter is an object with a `type`" });
      return;
    }
    const record = value as Record<string, unknown>;
    const type = record.type;
    if ((COMPOUNDS as readonly unknown[]).includes(type)) {
      if (level >= MAX_FILTER_DEPTH) {
        issues.push({
          path: at,
          message: `Compound filters nest at most ${MAX_FILTER_DEPTH} deep`,
        });
        return;
      }
      const extra = Object.keys(record).find((k) => k !== "type" && k !== "filters");
      if (extra) issues.push({ path: [...at, extra], message: `Unknown field \`${extra}\`` });
      const children = record.filters;
      if (!Array.isArray(children) || children.length === 0) {
        issues.push({
          path: [...at, "filters"],
          message: `\`${type}\` takes a non-empty list \`filters\``,
        });
        return;
      }
      for (const [i, child] of children.entries()) visit(child, [...at, "filters", i], level + 1);
      return;
    }
    if (!(COMPARISONS as readonly unknown[]).includes(type)) {
      issues.push({
        path: [...at, "type"],
        message: `Unknown filter type ${JSON.stringify(type)}; use one of ${[...COMPARISONS, ...COMPOUNDS].join(", ")}`,
      });
      return;
    }
    seen.comparisons++;
    checkComparison(record, at, issues);
  };
  visit(node, [], 0);
  if (seen.comparisons > MAX_COMPARISONS) {
    issues.push({ path: [], message: `At most ${MAX_COMPARISONS} comparisons in one filter` });
  }
  return issues;
}

/** The `filters` field of search, chat and the intel modules. */
export const FilterSchema = z
  .unknown()
  .superRefine((value, ctx) => {
    for (const issue of check(value)) {
      ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
    }
  })
  .transform((value) => value as FilterExpression)
  .openapi("FilterExpression", {
    type: "object",
    description: [
      "Only sources whose attributes match, in the shape of OpenAI's file search filters: a",
      'comparison `{"type": "eq"|"ne"|"gt"|"gte"|"lt"|"lte"|"in"|"nin", "key", "value"}` or a',
      'compound `{"type": "and"|"or", "filters": [...]}`, nested at most',
      `${MAX_FILTER_DEPTH} deep with at most ${MAX_COMPARISONS} comparisons. Keys are \`metadata\``,
      "keys and the built-in fields `type`, `source_id`, `crawl_id` (any crawl holding the page)",
      "and the dates `created_at` and `indexed_at` (compared with ISO 8601 strings or Unix",
      "seconds). `eq` on a list attribute matches when the list holds the value; `in` and `nin`",
      `take up to ${MAX_IN_VALUES} values. A source without the key, or with a value of another`,
      "type, matches `ne` and `nin` only. Disabled sources are never returned, whatever the filter.",
    ].join(" "),
    example: {
      type: "and",
      filters: [
        { type: "eq", key: "team", value: "sales" },
        { type: "gte", key: "year", value: 2024 },
      ],
    },
  });

/** The fields of a source record a filter reads. */
export const FILTER_FIELDS = [
  "type",
  "created_at",
  "indexed_at",
  "crawl_id",
  "holders",
  "metadata",
] as const;

type Filterable = Pick<SourceItem, "id" | "type" | "created_at" | "indexed_at" | "crawl_id"> &
  Partial<Pick<SourceItem, "holders" | "metadata">>;

/** A source's value under a key: the crawls that hold a page are a list, like a list attribute. */
function attributeOf(source: Filterable, key: string): MetadataValue | null | undefined {
  switch (key) {
    case "type":
      return source.type;
    case "source_id":
      return source.id;
    case "created_at":
      return source.created_at;
    case "indexed_at":
      return source.indexed_at;
    case "crawl_id":
      return [...holdersOf(source)].filter((holder) => holder !== DIRECT_HOLDER);
    default:
      return Object.hasOwn(source.metadata ?? {}, key) ? source.metadata?.[key] : undefined;
  }
}

const equal = (a: MetadataValue, b: unknown) =>
  Array.isArray(a) ? a.includes(b as string) : a === b;

/** `a` against `b` when both are numbers or both strings; undefined when they do not compare. */
function order(key: string, a: MetadataValue, b: unknown): number | undefined {
  if (DATES.has(key)) {
    const x = dateMillis(a);
    const y = dateMillis(b);
    return x === undefined || y === undefined ? undefined : x - y;
  }
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

function compare(comparison: Comparison, source: Filterable): boolean {
  const { type, key, value } = comparison;
  const actual = attributeOf(source, key);
  const present = actual !== undefined && actual !== null;
  switch (type) {
    case "eq":
      return present && equal(actual, value);
    case "ne":
      return !(present && equal(actual, value));
    case "in":
      return present && (value as unknown[]).some((item) => equal(actual, item));
    case "nin":
      return !(present && (value as unknown[]).some((item) => equal(actual, item)));
    default: {
      if (!present || Array.isArray(actual)) return false;
      const sign = order(key, actual, value);
      if (sign === undefined) return false;
      if (type === "gt") return sign > 0;
      if (type === "gte") return sign >= 0;
      if (type === "lt") return sign < 0;
      return sign <= 0;
    }
  }
}

/** Whether a source matches an expression. */
export function matchesFilter(expression: FilterExpression, source: Filterable): boolean {
  if (!("filters" in expression)) return compare(expression, source);
  const match = (filter: FilterExpression) => matchesFilter(filter, source);
  return expression.type === "and"
    ? expression.filters.every(match)
    : expression.filters.some(match);
}
