import { describe, expect, it } from "vitest";
import type { Change, ChangeKind } from "../../lib/competitors/diff.js";
import type { ContentItem } from "../../lib/competitors/extract/content.js";
import type { JobPosting } from "../../lib/competitors/extract/jobs.js";
import type { Plan } from "../../lib/competitors/extract/pricing.js";
import {
  CRITICAL_PRICE_MOVE,
  NOTABLE_POSTINGS,
  SEVERITIES,
  type Severity,
  severityOf,
} from "../../lib/competitors/severity.js";

const plan = (price: number | null, extra: Partial<Plan> = {}): Plan => ({
  name: "Pro",
  price,
  currency: price === null ? null : "USD",
  period: price === null ? null : "month",
  perSeat: false,
  contactSales: price === null,
  ...extra,
});
const jobs = (n: number): JobPosting[] =>
  Array.from({ length: n }, (_, i) => ({
    title: `Role ${i}`,
    team: "Ops",
    location: null,
    url: null,
  }));
const post: ContentItem = { title: "Launch", url: "https://acme.com/blog/launch", date: null };
const on = { subject: "Pro", url: "https://acme.com/pricing" };

const moved = (kind: "price_increase" | "price_decrease", percent: number | null): Change => ({
  ...on,
  type: "pricing",
  kind,
  before: plan(30),
  after: plan(30),
  percent,
});
const priced = (
  kind: Extract<Change, { type: "pricing" }>["kind"],
  before: Plan | null,
  after: Plan | null,
): Change => ({ ...on, type: "pricing", kind, before, after, percent: null });
const opened = (kind: "new_department" | "new_location" | "roles_added", n: number): Change => ({
  ...on,
  type: "hiring",
  kind,
  before: null,
  after: jobs(n),
});
const closed = (n: number, closedTeams: string[] = []): Change => ({
  ...on,
  type: "hiring",
  kind: "roles_removed",
  before: jobs(n),
  after: null,
  closedTeams,
});
const page = (path: string) => ({ url: `https://acme.com${path}`, title: null });
const messaging = (headlineChanged: boolean): Change => ({
  ...on,
  type: "messaging",
  kind: "messaging_changed",
  before: { headline: "Fast", claims: ["Fast"] },
  after: { headline: headlineChanged ? "Private" : "Fast", claims: ["Private"] },
  headlineChanged,
});

type Case = [label: string, change: Change, severity: Severity];

/**
 * Every change kind the rules know, keyed by kind so a new kind does not compile until it has a
 * case here; each case names the boundary it sits on.
 */
const CASES: Record<ChangeKind, Case[]> = {
  price_increase: [
    [
      "a rise just under the critical move",
      moved("price_increase", CRITICAL_PRICE_MOVE - 0.1),
      "high",
    ],
    [
      "a rise of exactly the critical move",
      moved("price_increase", CRITICAL_PRICE_MOVE),
      "critical",
    ],
    ["a rise past the critical move", moved("price_increase", 100), "critical"],
    ["a rise with no percent to measure", moved("price_increase", null), "critical"],
  ],
  price_decrease: [
    [
      "a cut just under the critical move",
      moved("price_decrease", 0.1 - CRITICAL_PRICE_MOVE),
      "high",
    ],
    [
      "a cut of exactly the critical move",
      moved("price_decrease", -CRITICAL_PRICE_MOVE),
      "critical",
    ],
    ["a cut past the critical move", moved("price_decrease", -60), "critical"],
  ],
  plan_added: [["a new plan", priced("plan_added", null, plan(30)), "high"]],
  plan_removed: [["a plan removed", priced("plan_removed", plan(30), null), "high"]],
  free_tier_added: [["a free plan added", priced("free_tier_added", null, plan(0)), "high"]],
  free_tier_removed: [
    ["a free plan starting to charge", priced("free_tier_removed", plan(0), plan(30)), "critical"],
    ["a free plan removed", priced("free_tier_removed", plan(0), null), "critical"],
  ],
  price_changed: [
    [
      "a currency or per-seat change",
      priced("price_changed", plan(30), plan(30, { currency: "EUR" })),
      "high",
    ],
  ],
  billing_period_changed: [
    [
      "monthly to yearly",
      priced("billing_period_changed", plan(30), plan(300, { period: "year" })),
      "high",
    ],
  ],
  moved_to_contact_sales: [
    ["a price hidden", priced("moved_to_contact_sales", plan(30), plan(null)), "high"],
  ],
  price_published: [["a price shown", priced("price_published", plan(null), plan(30)), "high"]],
  new_department: [["a new team hiring one person", opened("new_department", 1), "medium"]],
  new_location: [["a new location hiring one person", opened("new_location", 1), "medium"]],
  roles_added: [
    ["one fewer posting than a push", opened("roles_added", NOTABLE_POSTINGS - 1), "low"],
    ["exactly a push of postings", opened("roles_added", NOTABLE_POSTINGS), "medium"],
    [
      "one leadership hire",
      {
        ...on,
        type: "hiring",
        kind: "roles_added",
        before: null,
        after: [
          { title: "Head of Product Marketing", team: "Marketing", location: null, url: null },
        ],
      },
      "medium",
    ],
  ],
  roles_removed: [
    ["a few postings closed", closed(NOTABLE_POSTINGS - 1), "low"],
    ["a hiring freeze", closed(NOTABLE_POSTINGS), "medium"],
    ["a team left with no openings", closed(1, ["Ops"]), "medium"],
  ],
  post_published: [
    [
      "a new post",
      { ...on, type: "content", kind: "post_published", before: null, after: post },
      "low",
    ],
  ],
  page_added: [
    [
      "a new comparison page",
      { ...on, type: "content", kind: "page_added", before: null, after: page("/vs/us") },
      "high",
    ],
    [
      "a new product page",
      { ...on, type: "content", kind: "page_added", before: null, after: page("/product/new") },
      "medium",
    ],
  ],
  page_removed: [
    [
      "a removed page",
      { ...on, type: "content", kind: "page_removed", before: page("/features/x"), after: null },
      "medium",
    ],
  ],
  messaging_changed: [
    ["a new headline", messaging(true), "medium"],
    ["claims alone", messaging(false), "low"],
  ],
};

describe("severityOf", () => {
  it.each(
    Object.entries(CASES).flatMap(([kind, cases]) =>
      cases.map(([label, change, severity]) => [kind, label, change, severity] as const),
    ),
  )("rates %s (%s)", (kind, _label, change, severity) => {
    expect(change.kind).toBe(kind);
    expect(severityOf(change)).toBe(severity);
  });

  it("lists every level the rules give, least urgent first, for the API to accept and filter by", () => {
    const given = new Set(Object.values(CASES).flatMap((cases) => cases.map(([, , s]) => s)));
    expect(SEVERITIES).toEqual(["low", "medium", "high", "critical"]);
    expect(SEVERITIES.filter((s) => given.has(s))).toEqual(SEVERITIES);
  });
});
