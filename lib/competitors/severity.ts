import type { Change } from "./diff.js";

export type Severity = "low" | "medium" | "high" | "critical";
export const SEVERITIES: readonly Severity[] = ["low", "medium", "high", "critical"];

/** A price move at least this large (in percent, either way) is critical rather than high. */
export const CRITICAL_PRICE_MOVE = 25;
/** This many postings opened or closed at once is a hiring push or freeze, not routine churn. */
export const NOTABLE_POSTINGS = 5;

/**
 * How much a change matters to a competing marketing team, by rule. Money moves first: any price or
 * plan change is high, a large price move or a free plan starting to charge is critical. A new team
 * hiring is medium (a new function or market), routine postings and posts are low, a new headline
 * (repositioning) is medium.
 */
export function severityOf(change: Change): Severity {
  switch (change.kind) {
    case "price_increased":
    case "price_decreased":
      return change.percent === null || Math.abs(change.percent) >= CRITICAL_PRICE_MOVE
        ? "critical"
        : "high";
    case "plan_added":
    case "plan_removed":
    case "price_changed":
    case "now_contact_sales":
    case "price_published":
      return "high";
    case "team_added":
    case "headline_changed":
      return "medium";
    case "postings_added":
      return change.after.length >= NOTABLE_POSTINGS ? "medium" : "low";
    case "postings_removed":
      return change.closedTeams.length > 0 || change.before.length >= NOTABLE_POSTINGS
        ? "medium"
        : "low";
    case "content_published":
    case "content_batch":
    case "claims_changed":
      return "low";
  }
}
