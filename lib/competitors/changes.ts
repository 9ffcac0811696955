import type { Change, ChangeKind } from "./diff.js";
import type { JobPosting } from "./extract/jobs.js";
import { type Plan, planKey } from "./extract/pricing.js";
import type { Section } from "./sections.js";
import { bySeverity, severityOf } from "./severity.js";
import type { Facts } from "./snapshot.js";

/** Every kind of change an event can carry, with how a folded group of it is named. */
const KIND_NOUNS: Record<ChangeKind, string> = {
  price_increase: "price increases",
  price_decrease: "price decreases",
  plan_added: "new plans",
  plan_removed: "removed plans",
  moved_to_contact_sales: "plans moved to contact sales",
  price_published: "plans now showing a price",
  free_tier_added: "new free plans",
  free_tier_removed: "free plans gone",
  billing_period_changed: "billing period changes",
  price_changed: "pricing basis changes",
  roles_added: "role changes",
  roles_removed: "role closures",
  new_department: "new hiring teams",
  new_location: "new hiring locations",
  post_published: "new posts",
  page_added: "new pages",
  page_removed: "removed pages",
  messaging_changed: "messaging changes",
};

/** Every kind of change, pricing first, then hiring, content and messaging. */
export const CHANGE_KINDS = Object.keys(KIND_NOUNS) as [ChangeKind, ...ChangeKind[]];

/**
 * The values on one side of a change, as fields a client can filter and chart: a plan's price,
 * the roles and where they are, a page's address, the homepage's words. Only the fields the kind
 * has are present.
 */
export interface ChangeValues {
  plan?: string;
  amount?: number | null;
  currency?: string | null;
  period?: string | null;
  perSeat?: boolean;
  contactSales?: boolean;
  roles?: string[];
  department?: string;
  location?: string;
  /** Teams left with no opening after roles closed. */
  closedDepartments?: string[];
  title?: string | null;
  url?: string;
  date?: string | null;
  headline?: string | null;
  claims?: string[];
}

/** What an event says changed, as typed fields (the `change` of every event). */
export interface TypedChange {
  kind: ChangeKind;
  subject: string;
  url: string | null;
  before: ChangeValues | null;
  after: ChangeValues | null;
  /** A price move in percent of the old price (negative for a cut); null otherwise. */
  percentChange: number | null;
  /** 0 to 1: how sure the extraction behind the change is (see `confidenceOf`). */
  confidence: number;
  /** Changes the event stands for: more than one on the event folding a check's surplus. */
  count: number;
  /** The folded changes' subjects, the first `MAX_FOLDED_SUBJECTS`. */
  subjects?: string[];
}

/** Changes of one kind past the per-check bound, reported as one event. */
export interface FoldedChanges {
  folded: true;
  type: Section;
  kind: ChangeKind;
  url: string | null;
  changes: Change[];
}

/**
 * Events one check raises per kind at most; the rest of that kind fold into one more event. A
 * competitor's page decides how many changes there are, so without it a page listing 300 plans
 * would raise 300 events and spend 300 model calls (decision 0014).
 */
export const MAX_EVENTS_PER_KIND = 5;
const MAX_FOLDED_SUBJECTS = 20;

const planValues = (plan: Plan | null): ChangeValues | null =>
  plan && {
    plan: plan.name,
    amount: plan.price,
    currency: plan.currency,
    period: plan.period,
    perSeat: plan.perSeat,
    contactSales: plan.contactSales,
  };

const roleValues = (jobs: JobPosting[], extra: ChangeValues = {}): ChangeValues => ({
  ...extra,
  roles: jobs.map((job) => job.title),
});

function valuesOf(change: Change): Pick<TypedChange, "before" | "after"> {
  switch (change.type) {
    case "pricing":
      return { before: planValues(change.before), after: planValues(change.after) };
    case "hiring":
      switch (change.kind) {
        case "new_department":
          return { before: null, after: roleValues(change.after, { department: change.subject }) };
        case "new_location":
          return { before: null, after: roleValues(change.after, { location: change.subject }) };
        case "roles_added":
          return { before: null, after: roleValues(change.after) };
        case "roles_removed":
          return {
            before: roleValues(change.before, { closedDepartments: change.closedTeams }),
            after: null,
          };
      }
      break;
    case "content":
      switch (change.kind) {
        case "post_published":
          return { before: null, after: { ...change.after } };
        case "page_added":
          return { before: null, after: { url: change.after.url, title: change.after.title } };
        case "page_removed":
          return { before: { url: change.before.url, title: change.before.title }, after: null };
      }
      break;
    case "messaging":
      return { before: { ...change.before }, after: { ...change.after } };
  }
}

export function typedChange(change: Change, confidence: number): TypedChange {
  return {
    kind: change.kind,
    subject: change.subject,
    url: change.url,
    ...valuesOf(change),
    percentChange: "percent" in change ? change.percent : null,
    confidence,
    count: 1,
  };
}

export function foldedChange(folded: FoldedChanges, confidence: number): TypedChange {
  return {
    kind: folded.kind,
    subject: foldedSubject(folded),
    url: folded.url,
    before: null,
    after: null,
    percentChange: null,
    confidence,
    count: folded.changes.length,
    subjects: folded.changes.slice(0, MAX_FOLDED_SUBJECTS).map((change) => change.subject),
  };
}

export const foldedSubject = (folded: FoldedChanges) =>
  `${folded.changes.length} more ${KIND_NOUNS[folded.kind]}`;

const weight = (change: Change) => Math.abs("percent" in change ? (change.percent ?? 100) : 0);

/**
 * A check's changes with at most `max` events per kind: the most severe (then largest) changes of
 * a kind with too many keep their own event, `max - 1` of them, and the rest fold into one.
 */
export function boundChanges(
  changes: Change[],
  max = MAX_EVENTS_PER_KIND,
): Array<Change | FoldedChanges> {
  const byKind = new Map<ChangeKind, Change[]>();
  for (const change of changes)
    byKind.set(change.kind, [...(byKind.get(change.kind) ?? []), change]);
  return [...byKind.values()].flatMap((group): Array<Change | FoldedChanges> => {
    if (group.length <= max) return group;
    const ranked = [...group].sort(
      (a, b) => bySeverity(severityOf(a), severityOf(b)) || weight(b) - weight(a),
    );
    const [first] = ranked;
    const rest = ranked.slice(max - 1);
    return [
      ...ranked.slice(0, max - 1),
      {
        folded: true,
        type: first?.type ?? "content",
        kind: group[0]?.kind ?? "post_published",
        url: first?.url ?? null,
        changes: rest,
      },
    ];
  });
}

/**
 * How sure a check is of a section's extraction, from 0 to 1. Pricing: the share of the last
 * snapshot's plans found again; hiring: 1 from a job board's JSON, 0.8 from a page's markup;
 * posts and messaging: 1 (feeds and the homepage's own headings).
 */
/** The last snapshot's plans, and how many of them this extraction found again. */
function plansKept(before: Facts, after: Facts) {
  const known = before.pricing?.plans ?? [];
  const now = new Set(after.pricing?.plans.map((plan) => planKey(plan.name)));
  return { known: known.length, kept: known.filter((plan) => now.has(planKey(plan.name))).length };
}

export function confidenceOf(section: Section, before: Facts, after: Facts): number {
  if (section === "pricing") {
    const { known, kept } = plansKept(before, after);
    return known === 0 ? 1 : Math.round((kept / known) * 100) / 100;
  }
  if (section === "hiring") return after.hiring?.source === "page" ? 0.8 : 1;
  return 1;
}

/**
 * A pricing extraction not to trust: half the known plans or more gone at once, two at least (a
 * table that stopped parsing, a redesign the extractor half reads). It raises no pricing event
 * and the last trusted plans are kept; a competitor really dropping one of two plans still counts.
 */
export function untrustedPricing(before: Facts, after: Facts): boolean {
  // No pricing page read at all is a page that failed, carried over as such.
  if (!after.pricing) return false;
  const { known, kept } = plansKept(before, after);
  return known - kept >= 2 && kept * 2 <= known;
}
