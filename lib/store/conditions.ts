/**
 * Write conditions built from named parts: a small tree that `Table` compiles into DynamoDB's
 * expression language when it sends the write. The domain names what must hold (`equals`,
 * `missing`, `and`, ...) and never writes an expression: every placeholder is made here, unique
 * within its request, and every attribute name is aliased, so reserved words (`status`, `count`)
 * need no care.
 *
 * A field is an attribute name, or a path into a map written with dots (`quota.day`).
 */
export type Condition =
  | { readonly kind: "equals"; readonly field: string; readonly value: unknown }
  | { readonly kind: "lessThan" | "atMost"; readonly field: string; readonly value: number }
  | {
      readonly kind: "between";
      readonly field: string;
      readonly low: number;
      readonly high: number;
    }
  | { readonly kind: "exists" | "missing"; readonly field: string }
  | { readonly kind: "contains"; readonly field: string; readonly value: unknown }
  | { readonly kind: "sizeBelow"; readonly field: string; readonly size: number }
  | { readonly kind: "and" | "or"; readonly parts: readonly Condition[] }
  | { readonly kind: "not"; readonly part: Condition };

/** The field holds this value (`null` included). */
export const equals = (field: string, value: unknown): Condition => ({
  kind: "equals",
  field,
  value,
});

/** The field is a number below `value`. */
export const lessThan = (field: string, value: number): Condition => ({
  kind: "lessThan",
  field,
  value,
});

/** The field is a number no greater than `value`. */
export const atMost = (field: string, value: number): Condition => ({
  kind: "atMost",
  field,
  value,
});

/** The field is a number from `low` to `high`, both included. */
export const between = (field: string, low: number, high: number): Condition => ({
  kind: "between",
  field,
  low,
  high,
});

/** The item has the field. */
export const exists = (field: string): Condition => ({ kind: "exists", field });

/** The item lacks the field. */
export const missing = (field: string): Condition => ({ kind: "missing", field });

/** The field, a set (or a string), holds `value`. */
export const contains = (field: string, value: unknown): Condition => ({
  kind: "contains",
  field,
  value,
});

/** The field, a set (or a string, list or map), has fewer than `size` members. */
export const sizeBelow = (field: string, size: number): Condition => ({
  kind: "sizeBelow",
  field,
  size,
});

/** Every part holds. */
export const and = (first: Condition, ...rest: Condition[]): Condition =>
  rest.length === 0 ? first : { kind: "and", parts: [first, ...rest] };

/** At least one part holds. */
export const or = (first: Condition, ...rest: Condition[]): Condition =>
  rest.length === 0 ? first : { kind: "or", parts: [first, ...rest] };

/** The part does not hold (a missing field then counts as not holding it). */
export const not = (part: Condition): Condition => ({ kind: "not", part });

/**
 * The placeholders of one request, shared by its update and its condition: names are aliased
 * once per attribute, values get a placeholder each. For lib/store only.
 */
export class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly aliases = new Map<string, string>();
  private valueCount = 0;

  /** The alias of one attribute name (not a path). */
  name(attribute: string): string {
    let alias = this.aliases.get(attribute);
    if (alias === undefined) {
      alias = `#n${this.aliases.size}`;
      this.aliases.set(attribute, alias);
      this.names[alias] = attribute;
    }
    return alias;
  }

  /** The aliased path of a field (`quota.day`: `#n0.#n1`). */
  path(field: string): string {
    return field
      .split(".")
      .map((attribute) => this.name(attribute))
      .join(".");
  }

  value(value: unknown): string {
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = value;
    return placeholder;
  }
}

/** A condition as DynamoDB's expression language, its names and values added to `to`. For lib/store only. */
export function compile(condition: Condition, to: Placeholders): string {
  switch (condition.kind) {
    case "equals":
      return `${to.path(condition.field)} = ${to.value(condition.value)}`;
    case "lessThan":
      return `${to.path(condition.field)} < ${to.value(condition.value)}`;
    case "atMost":
      return `${to.path(condition.field)} <= ${to.value(condition.value)}`;
    case "between":
      return `${to.path(condition.field)} BETWEEN ${to.value(condition.low)} AND ${to.value(condition.high)}`;
    case "exists":
      return `attribute_exists(${to.path(condition.field)})`;
    case "missing":
      return `attribute_not_exists(${to.path(condition.field)})`;
    case "contains":
      return `contains(${to.path(condition.field)}, ${to.value(condition.value)})`;
    case "sizeBelow":
      return `size(${to.path(condition.field)}) < ${to.value(condition.size)}`;
    case "and":
    case "or":
      return condition.parts
        .map((part) => grouped(part, to))
        .join(condition.kind === "and" ? " AND " : " OR ");
    case "not":
      return `NOT ${grouped(condition.part, to)}`;
  }
}

/** A part inside AND, OR or NOT: compound parts in parentheses, so precedence never matters. */
const grouped = (part: Condition, to: Placeholders) =>
  part.kind === "and" || part.kind === "or" || part.kind === "not"
    ? `(${compile(part, to)})`
    : compile(part, to);
