import type { z } from "zod";
import { parseStrict, valueAt } from "./strict-mode.js";

/**
 * Soft limits: an answer is held to its schema's shape, while its sizes and ranges are fitted to
 * it (cut where they exceed a maximum, reported where they fall short of a minimum).
 */

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

/** An answer fitted to a schema (see `conform`), or what is wrong with its shape. */
export type Fitted<T> = ({ ok: true } & Conformed<T>) | { ok: false; problems: string[] };

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
