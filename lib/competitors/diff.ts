import { type ContentItem, contentKey } from "./extract/content.js";
import { type JobPosting, jobKey } from "./extract/jobs.js";
import { maskNumbers } from "./extract/messaging.js";
import { type Plan, planKey } from "./extract/pricing.js";
import type { Facts, Section } from "./snapshot.js";

type PlanChange =
  | { type: "pricing"; kind: "plan_added"; before: null; after: Plan }
  | { type: "pricing"; kind: "plan_removed"; before: Plan; after: null }
  | {
      type: "pricing";
      kind: "price_increased" | "price_decreased";
      before: Plan;
      after: Plan;
      /** The move in percent; null when the plan was free before. */
      percent: number | null;
    }
  | {
      type: "pricing";
      /** Currency, period or per-seat basis changed; or the price was hidden or published. */
      kind: "price_changed" | "now_contact_sales" | "price_published";
      before: Plan;
      after: Plan;
    };

type HiringChange =
  | { type: "hiring"; kind: "team_added" | "postings_added"; before: null; after: JobPosting[] }
  | {
      type: "hiring";
      kind: "postings_removed";
      before: JobPosting[];
      after: null;
      /** Teams left with no opening at all. */
      closedTeams: string[];
    };

type ContentChange =
  | { type: "content"; kind: "content_published"; before: null; after: ContentItem }
  | { type: "content"; kind: "content_batch"; before: null; after: ContentItem[] };

type MessagingChange =
  | { type: "messaging"; kind: "headline_changed"; before: string | null; after: string | null }
  /** `before` holds the claims dropped, `after` those added. */
  | { type: "messaging"; kind: "claims_changed"; before: string[]; after: string[] };

/** One real change between two snapshots: what becomes one event. */
export type Change = (PlanChange | HiringChange | ContentChange | MessagingChange) & {
  /** What changed: a plan's name, a team, a post's title, "headline". */
  subject: string;
  /** The page where the change shows. */
  url: string | null;
};

export type ChangeKind = Change["kind"];

/** More new posts than this at once reads as a site or feed restructure: one event, not many. */
const MAX_CONTENT_EVENTS = 5;

const byKey = <T>(items: T[], key: (item: T) => string) => new Map(items.map((i) => [key(i), i]));
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

function diffPlans(before: Plan[], after: Plan[], url: string): Change[] {
  const old = byKey(before, (p) => planKey(p.name));
  const now = byKey(after, (p) => planKey(p.name));
  const changes: Change[] = [];
  for (const [key, plan] of now) {
    const prev = old.get(key);
    const base = { type: "pricing", subject: plan.name, url } as const;
    if (!prev) {
      changes.push({ ...base, kind: "plan_added", before: null, after: plan });
    } else if (prev.contactSales !== plan.contactSales) {
      const kind = plan.contactSales ? "now_contact_sales" : "price_published";
      changes.push({ ...base, kind, before: prev, after: plan });
    } else if (
      // A free plan has no currency or period to compare: going paid is a price rise.
      prev.price !== 0 &&
      plan.price !== 0 &&
      (prev.currency !== plan.currency ||
        prev.period !== plan.period ||
        prev.perSeat !== plan.perSeat)
    ) {
      changes.push({ ...base, kind: "price_changed", before: prev, after: plan });
    } else if (prev.price !== plan.price) {
      const from = prev.price ?? 0;
      const to = plan.price ?? 0;
      changes.push({
        ...base,
        kind: to > from ? "price_increased" : "price_decreased",
        before: prev,
        after: plan,
        percent: from > 0 ? Math.round(((to - from) / from) * 1000) / 10 : null,
      });
    }
  }
  for (const [key, plan] of old) {
    if (!now.has(key)) {
      changes.push({
        type: "pricing",
        kind: "plan_removed",
        subject: plan.name,
        url,
        before: plan,
        after: null,
      });
    }
  }
  return changes;
}

const teamOf = (job: JobPosting) => (job.team ?? "Other").toLowerCase();

/**
 * Postings are grouped rather than one event each: a team hiring for the first time is one event
 * per team, other new postings one event, closed postings one event.
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
      kind: "team_added",
      subject: team,
      url,
      before: null,
      after: jobs,
    });
  }
  if (inKnownTeams.length > 0) {
    changes.push({
      type: "hiring",
      kind: "postings_added",
      subject: plural(inKnownTeams.length, "new job posting"),
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
      kind: "postings_removed",
      subject: `${plural(removed.length, "job posting")} closed`,
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
 * dated before everything seen last time is an old post slipping back into the window.
 */
function diffContent(before: ContentItem[], after: ContentItem[], url: string): Change[] {
  const seen = new Set(before.map((item) => contentKey(item.url)));
  const dates = before.flatMap((item) => item.date ?? []).sort();
  const oldest = dates[0];
  const fresh = after.filter(
    (item) => !seen.has(contentKey(item.url)) && !(oldest && item.date && item.date < oldest),
  );
  if (fresh.length > MAX_CONTENT_EVENTS) {
    const subject = `${fresh.length} new posts`;
    return [{ type: "content", kind: "content_batch", subject, url, before: null, after: fresh }];
  }
  return fresh.map((item) => ({
    type: "content",
    kind: "content_published",
    subject: item.title,
    url: item.url,
    before: null,
    after: item,
  }));
}

type MessagingFacts = NonNullable<Facts["messaging"]>;

function diffMessaging(before: MessagingFacts, after: MessagingFacts): Change[] {
  const changes: Change[] = [];
  const url = after.url;
  if (maskNumbers(before.headline ?? "") !== maskNumbers(after.headline ?? "")) {
    changes.push({
      type: "messaging",
      kind: "headline_changed",
      subject: "headline",
      url,
      before: before.headline,
      after: after.headline,
    });
  }
  const old = new Set(before.claims.map(maskNumbers));
  const now = new Set(after.claims.map(maskNumbers));
  const added = after.claims.filter((claim) => !old.has(maskNumbers(claim)));
  const dropped = before.claims.filter((claim) => !now.has(maskNumbers(claim)));
  if (added.length > 0 || dropped.length > 0) {
    changes.push({
      type: "messaging",
      kind: "claims_changed",
      subject: "claims",
      url,
      before: dropped,
      after: added,
    });
  }
  return changes;
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
    ...(content ? diffContent(content[0].items, content[1].items, content[1].url) : []),
    ...(messaging ? diffMessaging(messaging[0], messaging[1]) : []),
  ];
}
