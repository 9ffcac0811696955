import { DomainError, notFound } from "../errors.js";
import { newId } from "../ids.js";
import { equals } from "../store/conditions.js";
import { type Item, type Table, wsKey } from "../store/table.js";
import type { TypedChange } from "./changes.js";
import type { ChangeKind } from "./diff.js";
import type { EventType } from "./events.js";
import { SEVERITIES, type Severity } from "./severity.js";

/** Numeric fields of a change a rule can hold to a threshold. */
export const RULE_FIELDS = ["percent_change", "abs_percent_change", "confidence", "count"] as const;
export type RuleField = (typeof RULE_FIELDS)[number];
export const RULE_OPERATORS = [">=", ">", "<=", "<", "="] as const;
export type RuleOperator = (typeof RULE_OPERATORS)[number];

export interface RuleCondition {
  field: RuleField;
  op: RuleOperator;
  value: number;
}

/** What a rule says, as a client writes it. */
export interface AlertRuleInput {
  name: string;
  /** Only this competitor's events; null for every competitor of the workspace. */
  competitorId: string | null;
  /** Any of these event types; empty for any. */
  types: EventType[];
  /** Any of these kinds of change; empty for any. */
  kinds: ChangeKind[];
  /** This severity or above; null for any. */
  minSeverity: Severity | null;
  /** Every condition must hold; a change without the field (no percent) fails it. */
  conditions: RuleCondition[];
  /** Any of these words in the new post, role, page or plan names (case-insensitive); empty for any. */
  keywords: string[];
}

export interface AlertRule extends AlertRuleInput {
  id: string;
  createdAt: string;
}

/** What a rule is matched against: an event, recorded or about to be. */
export interface AlertSubject {
  competitorId: string;
  type: EventType;
  severity: Severity;
  change: TypedChange;
}

/** Rules a workspace holds at most: every check reads them all, in one item. */
export const MAX_ALERT_RULES = 50;

function fieldOf(change: TypedChange, field: RuleField): number | null {
  switch (field) {
    case "percent_change":
      return change.percentChange;
    case "abs_percent_change":
      return change.percentChange === null ? null : Math.abs(change.percentChange);
    case "confidence":
      return change.confidence;
    case "count":
      return change.count;
  }
}

function holds({ field, op, value }: RuleCondition, change: TypedChange): boolean {
  const actual = fieldOf(change, field);
  if (actual === null) return false;
  switch (op) {
    case ">=":
      return actual >= value;
    case ">":
      return actual > value;
    case "<=":
      return actual <= value;
    case "<":
      return actual < value;
    case "=":
      return actual === value;
  }
}

/** The names a change brings in: what keywords are looked for in. */
function wordsOf(change: TypedChange): string {
  const sides = [change.after, change.before].flatMap((values) =>
    values
      ? [values.plan, values.title, values.department, values.location, ...(values.roles ?? [])]
      : [],
  );
  return [change.subject, ...sides, ...(change.subjects ?? [])]
    .filter((text): text is string => typeof text === "string")
    .join("\n")
    .toLowerCase();
}

const atLeast = (severity: Severity, min: Severity) =>
  SEVERITIES.indexOf(severity) >= SEVERITIES.indexOf(min);

/** Whether one rule matches an event: every criterion it gives holds. */
export function ruleMatches(rule: AlertRuleInput, event: AlertSubject): boolean {
  if (rule.competitorId !== null && rule.competitorId !== event.competitorId) return false;
  if (rule.types.length > 0 && !rule.types.includes(event.type)) return false;
  if (rule.kinds.length > 0 && !rule.kinds.includes(event.change.kind)) return false;
  if (rule.minSeverity !== null && !atLeast(event.severity, rule.minSeverity)) return false;
  if (!rule.conditions.every((condition) => holds(condition, event.change))) return false;
  if (rule.keywords.length === 0) return true;
  const words = wordsOf(event.change);
  return rule.keywords.some((keyword) => words.includes(keyword.toLowerCase()));
}

/** The rules an event matches, by id. */
export const matchingRules = (rules: readonly AlertRule[], event: AlertSubject): string[] =>
  rules.filter((rule) => ruleMatches(rule, event)).map((rule) => rule.id);

/**
 * Whether an event notifies (webhooks, channels) and shows as an alert in the feed: when the
 * workspace has no rules, every event does, as before rules existed; otherwise only an event some
 * rule matches. Events are recorded either way.
 */
export const shouldNotify = (rules: readonly AlertRule[], event: AlertSubject): boolean =>
  rules.length === 0 || rules.some((rule) => ruleMatches(rule, event));

interface RulesItem extends Item {
  rules: AlertRule[];
  version: number;
}

const RULES_KEY = "ALERTRULES";
/** Writes that lost a race to another write of the rules are retried this often. */
const WRITE_ATTEMPTS = 5;

/**
 * A workspace's alert rules, all in one item: a check reads them with one request, and the cap
 * and every change hold under one condition on the item's version.
 */
export class AlertRules {
  constructor(private readonly table: Table) {}

  async list(workspaceId: string): Promise<AlertRule[]> {
    const item = await this.table.get<RulesItem>(wsKey(workspaceId), RULES_KEY);
    return item?.rules ?? [];
  }

  /** `limit_reached` past `MAX_ALERT_RULES`. */
  async create(workspaceId: string, input: AlertRuleInput, now = new Date()): Promise<AlertRule> {
    const rule: AlertRule = { id: newId("rule"), ...input, createdAt: now.toISOString() };
    await this.write(workspaceId, (rules) => {
      if (rules.length >= MAX_ALERT_RULES) {
        throw new DomainError(
          "limit_reached",
          `A workspace holds at most ${MAX_ALERT_RULES} alert rules; delete one first`,
          { details: { cap: "alert_rules", limit: MAX_ALERT_RULES } },
        );
      }
      return [...rules, rule];
    });
    return rule;
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    await this.write(workspaceId, (rules) => {
      if (!rules.some((rule) => rule.id === id)) throw notFound("alert rule", id);
      return rules.filter((rule) => rule.id !== id);
    });
  }

  private async write(
    workspaceId: string,
    edit: (rules: AlertRule[]) => AlertRule[],
  ): Promise<void> {
    const pk = wsKey(workspaceId);
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const item = await this.table.get<RulesItem>(pk, RULES_KEY);
      const rules = edit(item?.rules ?? []);
      const written = item
        ? await this.table.update(
            pk,
            RULES_KEY,
            { rules, version: item.version + 1 },
            equals("version", item.version),
          )
        : await this.table.create({ pk, sk: RULES_KEY, rules, version: 1 } satisfies RulesItem);
      if (written) return;
    }
    throw new DomainError("conflict", "The alert rules changed meanwhile; try again");
  }
}
