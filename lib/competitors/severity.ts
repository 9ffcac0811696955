import type { Change } from "./diff.js";

export type Severity = "low" | "medium" | "high" | "critical";
export const SEVERITIES: readonly Severity[] = ["low", "medium", "high", "critical"];

/** A price move at least this large (in percent, either way) is critical rather than high. */
export const CRITICAL_PRICE_MOVE = 25;
/** This many postings opened or closed at once is a hiring push or freeze, not routine churn. */
export const NOTABLE_POSTINGS = 5;

/** A leadership title: a team being built, not a seat being filled. */
const LEADERSHIP = /\b(?:head of|vp|vice president|director|chief|cmo|cto|ceo|coo|cro|cpo)\b/i;
/** A page that compares the competitor with others (`/vs/us`, `/compare`, `/alternatives`). */
const COMPARISON = /\/(?:vs|versus|compare|comparisons?|alternatives?)(?:[/-]|$)/i;

/**
 * How much a change matters to a competing marketing team, by rule over the structured change
 * only: nothing a page says can move it. Money moves first: any price or plan change is high, a
 * large price move or a free plan going away is critical. A new team or location hiring, a
 * leadership hire, a hiring push and a new headline (repositioning) are medium; a new comparison
 * page is high; routine postings and posts are low.
 */
export function severityOf(change: Change): Severity {
  switch (change.kind) {
    case "price_increase":
    case "price_decrease":
      return change.percent === null || Math.abs(change.percent) >= CRITICAL_PRICE_MOVE
        ? "critical"
        : "high";
    case "free_tier_removed":
      return "critical";
    case "plan_added":
    case "plan_removed":
    case "free_tier_added":
    case "price_changed":
    case "billing_period_changed":
    case "moved_to_contact_sales":
    case "price_published":
      return "high";
    case "new_department":
    case "new_location":
      return "medium";
    case "roles_added":
      return change.after.length >= NOTABLE_POSTINGS ||
        change.after.some((job) => LEADERSHIP.test(job.title))
        ? "medium"
        : "low";
    case "roles_removed":
      return change.closedTeams.length > 0 || change.before.length >= NOTABLE_POSTINGS
        ? "medium"
        : "low";
    case "page_added":
    case "page_removed": {
      const page = change.after ?? change.before;
      return COMPARISON.test(new URL(page.url).pathname) ? "high" : "medium";
    }
    case "messaging_changed":
      return change.headlineChanged ? "medium" : "low";
    case "post_published":
      return "low";
  }
}

/** Most severe first. */
export const bySeverity = (a: Severity, b: Severity) =>
  SEVERITIES.indexOf(b) - SEVERITIES.indexOf(a);
