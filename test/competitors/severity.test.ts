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

const moved = (kind: "price_increased" | "price_decreased", percent: number | null): Change => ({
  ...on,
  type: "pricing",
  kind,
  before: plan(30),
  after: plan(30),
  percent,
});
const opened = (kind: "team_added" | "postings_added", n: number): Change => ({
  ...on,
  type: "hiring",
  kind,
  before: null,
  after: jobs(n),
});
const closed = (n: number, closedTeams: string[] = []): Change => ({
  ...on,
  type: "hiring",
  kind: "postings_removed",
  before: jobs(n),
  after: null,
  closedTeams,
});

type Case = [label: string, change: Change, severity: Severity];

/**
 * Every change kind the rules know, keyed by kind so a new kind does not compile until it has a
 * row, with both sides of each magnitude threshold.
 */
const CASES: Record<ChangeKind, Case[]> = {
  price_increased: [
    [
      "a rise just under the critical move",
      moved("price_increased", CRITICAL_PRICE_MOVE - 0.1),
      "high",
    ],
    [
      "a rise of exactly the critical move",
      moved("price_increased", CRITICAL_PRICE_MOVE),
      "critical",
    ],
    ["a rise past the critical move", moved("price_increased", 100), "critical"],
    ["a free plan starting to charge (no percent)", moved("price_increased", null), "critical"],
  ],
  price_decreased: [
    [
      "a cut just under the critical move",
      moved("price_decreased", 0.1 - CRITICAL_PRICE_MOVE),
      "high",
    ],
    [
      "a cut of exactly the critical move",
      moved("price_decreased", -CRITICAL_PRICE_MOVE),
      "critical",
    ],
    ["a cut past the critical move", moved("price_decreased", -60), "critical"],
  ],
  plan_added: [
    [
      "a new plan",
      { ...on, type: "pricing", kind: "plan_added", before: null, after: plan(9) },
      "high",
    ],
  ],
  plan_removed: [
    [
      "a plan withdrawn",
      { ...on, type: "pricing", kind: "plan_removed", before: plan(9), after: null },
      "high",
    ],
  ],
  price_changed: [
    [
      "monthly becoming yearly",
      {
        ...on,
        type: "pricing",
        kind: "price_changed",
        before: plan(30),
        after: plan(30, { period: "year" }),
      },
      "high",
    ],
  ],
  now_contact_sales: [
    [
      "a price hidden behind sales",
      { ...on, type: "pricing", kind: "now_contact_sales", before: plan(30), after: plan(null) },
      "high",
    ],
  ],
  price_published: [
    [
      "a hidden price published",
      { ...on, type: "pricing", kind: "price_published", before: plan(null), after: plan(30) },
      "high",
    ],
  ],
  team_added: [["a new team hiring one person", opened("team_added", 1), "medium"]],
  postings_added: [
    ["one fewer posting than a push", opened("postings_added", NOTABLE_POSTINGS - 1), "low"],
    ["exactly a push of postings", opened("postings_added", NOTABLE_POSTINGS), "medium"],
  ],
  postings_removed: [
    ["one fewer closing than a freeze", closed(NOTABLE_POSTINGS - 1), "low"],
    ["exactly a freeze of closings", closed(NOTABLE_POSTINGS), "medium"],
    ["a team's last posting closing", closed(1, ["Sales"]), "medium"],
  ],
  headline_changed: [
    [
      "a new headline",
      { ...on, type: "messaging", kind: "headline_changed", before: "Fast", after: "Private" },
      "medium",
    ],
  ],
  claims_changed: [
    [
      "claims rewritten",
      { ...on, type: "messaging", kind: "claims_changed", before: ["Fast"], after: ["Private"] },
      "low",
    ],
  ],
  content_published: [
    [
      "a new post",
      { ...on, type: "content", kind: "content_published", before: null, after: post },
      "low",
    ],
  ],
  content_batch: [
    [
      "a batch of new posts",
      { ...on, type: "content", kind: "content_batch", before: null, after: [post, post] },
      "low",
    ],
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
