import { type ContentItem, contentKey } from "./extract/content.js";
import { type JobPosting, jobKey } from "./extract/jobs.js";
import { maskNumbers } from "./extract/messaging.js";
import { type Plan, planKey } from "./extract/pricing.js";
import type { Facts, Section } from "./snapshot.js";

type PlanChange = {
  type: "pricing";
  /**
   * `price_changed`: the currency or the per-seat basis changed; `price_published`: a plan that
   * asked buyers to contact sales shows a price again. A free plan starting to charge is
   * `free_tier_removed`, a paid one becoming free `free_tier_added`.
   */
  kind:
    | "plan_added"
    | "plan_removed"
    | "free_tier_added"
    | "free_tier_removed"
    | "price_increase"
    | "price_decrease"
    | "billing_period_changed"
    | "price_changed"
    | "moved_to_contact_sales"
    | "price_published";
  before: Plan | null;
  after: Plan | null;
  /** Price moves: the move in percent of the old price; null when there is none to measure. */
  percent: number | null;
};

type HiringChange =
  | {
      type: "hiring";
      kind: "new_department" | "new_location" | "roles_added";
      before: null;
      after: JobPosting[];
    }
  | {
      type: "hiring";
      kind: "roles_removed";
      before: JobPosting[];
      after: null;
      /** Teams left with no opening at all. */
      closedTeams: string[];
    };

/** A page of the site: `page_added` and `page_removed` come from the site-wide watch. */
export interface SitePage {
  url: string;
  title: string | null;
}

type ContentChange =
  | { type: "content"; kind: "post_published"; before: null; after: ContentItem }
  | { type: "content"; kind: "page_added"; before: null; after: SitePage }
  | { type: "content"; kind: "page_removed"; before: SitePage; after: null };

/** `before` holds the old headline and the claims dropped, `after` the new one and those added. */
type MessagingChange = {
  type: "messaging";
  kind: "messaging_changed";
  before: { headline: string | null; claims: string[] };
  after: { headline: string | null; claims: string[] };
  headlineChanged: boolean;
};

/** One real change between two snapshots: what becomes one event. */
export type Change = (PlanChange | HiringChange | ContentChange | MessagingChange) & {
  /** What changed: a plan's name, a team, a location, a post's title, "homepage messaging". */
  subject: string;
  /** The page where the change shows. */
  url: string | null;
};

export type ChangeKind = Change["kind"];

const byKey = <T>(items: T[], key: (item: T) => string) => new Map(items.map((i) => [key(i), i]));
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

const percentOf = (from: number, to: number) =>
  from > 0 ? Math.round(((to - from) / from) * 1000) / 10 : null;

/** What happened to a plan seen on both sides, or undefined when nothing did. */
function planMove(prev: Plan, plan: Plan): PlanChange["kind"] | undefined {
  if (prev.contactSales !== plan.contactSales) {
    return plan.contactSales ? "moved_to_contact_sales" : "price_published";
  }
  if (prev.price === 0 && (plan.price ?? 0) > 0) return "free_tier_removed";
  if ((prev.price ?? 0) > 0 && plan.price === 0) return "free_tier_added";
  // A free plan has no currency or period to compare.
  if (prev.price === 0 || plan.price === 0) return undefined;
  if (prev.currency !== plan.currency || prev.perSeat !== plan.perSeat) return "price_changed";
  if (prev.period !== plan.period) return "billing_period_changed";
  if (prev.price === plan.price) return undefined;
  return (plan.price ?? 0) > (prev.price ?? 0) ? "price_increase" : "price_decrease";
}

function diffPlans(before: Plan[], after: Plan[], url: string): Change[] {
  const old = byKey(before, (p) => planKey(p.name));
  const now = byKey(after, (p) => planKey(p.name));
  const changes: Change[] = [];
  for (const [key, plan] of now) {
    const prev = old.get(key);
    const base = { type: "pricing", subject: plan.name, url } as const;
    if (!prev) {
      const kind = plan.price === 0 ? "free_tier_added" : "plan_added";
      changes.push({ ...base, kind, before: null, after: plan, percent: null });
      continue;
    }
    const kind = planMove(prev, plan);
    if (!kind) continue;
    // Across currencies, seats or periods a percentage would compare unlike amounts.
    const moved = kind === "price_increase" || kind === "price_decrease";
    const percent = moved ? percentOf(prev.price ?? 0, plan.price ?? 0) : null;
    changes.push({ ...base, kind, before: prev, after: plan, percent });
  }
  for (const [key, plan] of old) {
    if (!now.has(key)) {
      changes.push({
        type: "pricing",
        kind: plan.price === 0 ? "free_tier_removed" : "plan_removed",
        subject: plan.name,
        url,
        before: plan,
        after: null,
        percent: null,
      });
    }
  }
  return changes;
}

const teamOf = (job: JobPosting) => (job.team ?? "Other").toLowerCase();
const placeOf = (job: JobPosting) => job.location?.toLowerCase().trim() ?? "";

/**
 * New roles in places the competitor had none: one event per new location. Only once the last
 * snapshot knew some locations, so a board that starts publishing them raises nothing.
 */
function newLocations(before: JobPosting[], added: JobPosting[], url: string): Change[] {
  const known = new Set(before.map(placeOf).filter(Boolean));
  if (known.size === 0) return [];
  const places = new Map<string, JobPosting[]>();
  for (const job of added) {
    const place = placeOf(job);
    if (place && !known.has(place)) places.set(place, [...(places.get(place) ?? []), job]);
  }
  return [...places.values()].map((jobs) => ({
    type: "hiring",
    kind: "new_location",
    subject: jobs[0]?.location ?? "",
    url,
    before: null,
    after: jobs,
  }));
}

/**
 * Postings are grouped rather than one event each: a team hiring for the first time is one event
 * per team, a new location one per location, other new postings one event, closed postings one.
 */
function diffJobs(before: JobPosting[], after: JobPosting[], url: string): Change[] {
  const old = byKey(before, jobKey);
  const now = byKey(after, jobKey);
  const added = [...now].filter(([key]) => !old.has(key)).map(([, job]) => job);
  const removed = [...old].filter(([key]) => !now.has(key)).map(([, job]) => job);
  const oldTeams = new Set(before.map(teamOf));
  const nowTeams = new Set(after.map(teamOf));
  const changes: Change[] = [];
  const newTeams = new Map<string, JobPosting[]>();
  const inKnownTeams: JobPosting[] = [];
  for (const job of added) {
    if (job.team && !oldTeams.has(teamOf(job))) {
      newTeams.set(job.team, [...(newTeams.get(job.team) ?? []), job]);
    } else {
      inKnownTeams.push(job);
    }
  }
  for (const [team, jobs] of newTeams) {
    changes.push({
      type: "hiring",
      kind: "new_department",
      subject: team,
      url,
      before: null,
      after: jobs,
    });
  }
  changes.push(...newLocations(before, added, url));
  if (inKnownTeams.length > 0) {
    changes.push({
      type: "hiring",
      kind: "roles_added",
      subject: plural(inKnownTeams.length, "new role"),
      url,
      before: null,
      after: inKnownTeams,
    });
  }
  if (removed.length > 0) {
    const closedTeams = [
      ...new Set(removed.filter((job) => job.team).map((job) => job.team ?? "")),
    ];
    changes.push({
      type: "hiring",
      kind: "roles_removed",
      subject: `${plural(removed.length, "role")} closed`,
      url,
      before: removed,
      after: null,
      closedTeams: closedTeams.filter((team) => !nowTeams.has(team.toLowerCase())),
    });
  }
  return changes;
}

/**
 * New items only: feeds drop old posts as new ones arrive, so a missing item is no news. An item
 * dated before everything seen last time is an old post slipping back into the window. Many new
 * posts at once are bounded like any kind of change (changes.ts).
 */
function diffContent(before: ContentItem[], after: ContentItem[]): Change[] {
  const seen = new Set(before.map((item) => contentKey(item.url)));
  const dates = before.flatMap((item) => item.date ?? []).sort();
  const oldest = dates[0];
  const fresh = after.filter(
    (item) => !seen.has(contentKey(item.url)) && !(oldest && item.date && item.date < oldest),
  );
  return fresh.map((item) => ({
    type: "content",
    kind: "post_published",
    subject: item.title,
    url: item.url,
    before: null,
    after: item,
  }));
}

type MessagingFacts = NonNullable<Facts["messaging"]>;

/** The headline and claims as one change: counters and dates in them are masked first. */
function diffMessaging(before: MessagingFacts, after: MessagingFacts): Change[] {
  const headlineChanged = maskNumbers(before.headline ?? "") !== maskNumbers(after.headline ?? "");
  const old = new Set(before.claims.map(maskNumbers));
  const now = new Set(after.claims.map(maskNumbers));
  const added = after.claims.filter((claim) => !old.has(maskNumbers(claim)));
  const dropped = before.claims.filter((claim) => !now.has(maskNumbers(claim)));
  if (!headlineChanged && added.length === 0 && dropped.length === 0) return [];
  return [
    {
      type: "messaging",
      kind: "messaging_changed",
      subject: headlineChanged ? "homepage headline" : "homepage claims",
      url: after.url,
      before: { headline: before.headline, claims: dropped },
      after: { headline: after.headline, claims: added },
      headlineChanged,
    },
  ];
}

/**
 * The real changes from one snapshot's facts to the next. Only sections present on both sides are
 * compared: a section seen for the first time is its own baseline.
 */
export function diffFacts(before: Facts, after: Facts): Change[] {
  const both = <S extends Section>(section: S) =>
    before[section] && after[section]
      ? ([before[section], after[section]] as [NonNullable<Facts[S]>, NonNullable<Facts[S]>])
      : undefined;
  const pricing = both("pricing");
  const hiring = both("hiring");
  const content = both("content");
  const messaging = both("messaging");
  return [
    ...(pricing ? diffPlans(pricing[0].plans, pricing[1].plans, pricing[1].url) : []),
    ...(hiring ? diffJobs(hiring[0].jobs, hiring[1].jobs, hiring[1].url) : []),
    ...(content ? diffContent(content[0].items, content[1].items) : []),
    ...(messaging ? diffMessaging(messaging[0], messaging[1]) : []),
  ];
}
