import { describe, expect, it } from "vitest";
import { formatPrice, summarize, titleOf } from "../../lib/competitors/brief.js";
import { type Change, diffFacts } from "../../lib/competitors/diff.js";
import type { ContentItem } from "../../lib/competitors/extract/content.js";
import type { JobPosting } from "../../lib/competitors/extract/jobs.js";
import type { Plan } from "../../lib/competitors/extract/pricing.js";
import type { Facts } from "../../lib/competitors/snapshot.js";
import { fingerprints } from "../../lib/competitors/snapshot.js";

const plan = (name: string, price: number | null, extra: Partial<Plan> = {}): Plan => ({
  name,
  price,
  currency: price === null ? null : "USD",
  period: price ? "month" : null,
  perSeat: false,
  contactSales: price === null,
  ...extra,
});
const job = (title: string, team: string | null, location = "Remote"): JobPosting => ({
  title,
  team,
  location,
  url: null,
});
const post = (slug: string, date: string | null): ContentItem => ({
  title: slug,
  url: `https://acme.com/blog/${slug}`,
  date,
});

const pricing = (...plans: Plan[]): Facts => ({
  pricing: { url: "https://acme.com/pricing", plans },
});
const hiring = (...jobs: JobPosting[]): Facts => ({
  hiring: { url: "https://acme.com/careers", source: "page", jobs },
});
const content = (...items: ContentItem[]): Facts => ({
  content: { url: "https://acme.com/feed", items },
});
const messaging = (headline: string, claims: string[] = []): Facts => ({
  messaging: { url: "https://acme.com/", headline, claims },
});
const kinds = (changes: Change[]) => changes.map((c) => c.kind);

describe("diffFacts", () => {
  it("sees plans added, removed, repriced, hidden and published", () => {
    const changes = diffFacts(
      pricing(
        plan("Basic", 10),
        plan("Pro", 30),
        plan("Team", 50),
        plan("Old", 5),
        plan("Custom", null),
      ),
      pricing(
        plan("basic plan", 10),
        plan("Pro", 24),
        plan("Team", null),
        plan("New", 99),
        plan("Custom", 500),
      ),
    );
    expect(kinds(changes)).toEqual([
      "price_decrease",
      "moved_to_contact_sales",
      "plan_added",
      "price_published",
      "plan_removed",
    ]);
    expect(changes[0]).toMatchObject({ subject: "Pro", percent: -20 });
  });

  it("calls a free plan starting to charge a free tier removed, and rounds percents to one decimal", () => {
    const free = plan("Pro", 0, { period: "month" });
    expect(diffFacts(pricing(free), pricing(plan("Pro", 9)))).toMatchObject([
      { kind: "free_tier_removed", percent: null },
    ]);
    expect(diffFacts(pricing(plan("Pro", 9)), pricing(free))).toMatchObject([
      { kind: "free_tier_added" },
    ]);
    expect(kinds(diffFacts(pricing(free), pricing()))).toEqual(["free_tier_removed"]);
    expect(kinds(diffFacts(pricing(), pricing(free)))).toEqual(["free_tier_added"]);
    expect(diffFacts(pricing(plan("Pro", 30)), pricing(plan("Pro", 37.49)))).toMatchObject([
      { kind: "price_increase", percent: 25 },
    ]);
  });

  it("tells a billing period change from a change of currency or seat basis", () => {
    const yearly = plan("Pro", 300, { period: "year" });
    expect(diffFacts(pricing(plan("Pro", 30)), pricing(yearly))).toMatchObject([
      { kind: "billing_period_changed", percent: null },
    ]);
    const euros = plan("Pro", 30, { currency: "EUR" });
    expect(kinds(diffFacts(pricing(plan("Pro", 30)), pricing(euros)))).toEqual(["price_changed"]);
  });

  it("groups postings: a new team apart, other new postings together, closed postings together", () => {
    const changes = diffFacts(
      hiring(job("Engineer", "Engineering"), job("AE", "Sales"), job("SDR", "Sales")),
      hiring(
        job("Engineer", "Engineering"),
        job("SRE", "engineering"),
        job("Analyst", "Data"),
        job("ML", "Data"),
      ),
    );
    expect(changes).toMatchObject([
      { kind: "new_department", subject: "Data", after: [{ title: "Analyst" }, { title: "ML" }] },
      { kind: "roles_added", subject: "1 new role", after: [{ title: "SRE" }] },
      { kind: "roles_removed", subject: "2 roles closed", closedTeams: ["Sales"] },
    ]);
  });

  it("reports a location hiring for the first time, once locations are known", () => {
    const before = hiring(job("Engineer", "Engineering", "Berlin"));
    const after = hiring(
      job("Engineer", "Engineering", "Berlin"),
      job("SRE", "Engineering", "Lisbon"),
      job("PM", "Engineering", "lisbon"),
    );
    expect(diffFacts(before, after)).toMatchObject([
      { kind: "new_location", subject: "Lisbon", after: [{ title: "SRE" }, { title: "PM" }] },
      { kind: "roles_added" },
    ]);
    const unplaced = hiring({ ...job("Engineer", "Engineering"), location: null });
    expect(kinds(diffFacts(unplaced, after))).not.toContain("new_location");
  });

  it("reports new posts only, not old ones leaving or re-entering the window", () => {
    const before = content(post("b", "2025-02-01"), post("c", "2025-01-15"));
    const after = content(
      post("new", "2025-03-01"),
      post("b", "2025-02-01"),
      post("ancient", "2024-05-01"),
    );
    expect(diffFacts(before, after)).toMatchObject([{ kind: "post_published", subject: "new" }]);
  });

  it("sees headline and claims rewrites, but not moving numbers or reordering", () => {
    const before = messaging("Join 10,000 teams", ["Fast", "Secure", "Since 2019"]);
    expect(
      diffFacts(before, messaging("Join 12,500 teams", ["Since 2020", "Secure", "Fast"])),
    ).toEqual([]);
    expect(diffFacts(before, messaging("Built for teams", ["Fast", "Private"]))).toMatchObject([
      {
        kind: "messaging_changed",
        headlineChanged: true,
        before: { headline: "Join 10,000 teams", claims: ["Secure", "Since 2019"] },
        after: { headline: "Built for teams", claims: ["Private"] },
      },
    ]);
  });

  it("compares only sections present on both sides", () => {
    expect(diffFacts(pricing(plan("Pro", 30)), hiring(job("Engineer", "Engineering")))).toEqual([]);
  });
});

describe("fingerprints", () => {
  it("ignore order and page URLs, and differ on a real change", () => {
    const a = fingerprints({
      ...pricing(plan("A", 1), plan("B", 2)),
      ...messaging("Hi", ["x", "y"]),
    });
    const b = fingerprints({
      pricing: { url: "https://acme.com/plans", plans: [plan("B", 2), plan("A", 1)] },
      ...messaging("Hi", ["y", "x"]),
    });
    expect(b).toEqual(a);
    expect(fingerprints(pricing(plan("A", 1), plan("B", 3))).pricing).not.toBe(a.pricing);
    expect(Object.keys(a).sort()).toEqual(["messaging", "pricing"]);
  });
});

describe("titles and deterministic briefs", () => {
  it("format prices as people read them", () => {
    expect(formatPrice(plan("A", 29))).toBe("$29 per month");
    expect(formatPrice(plan("A", 9.5, { currency: "EUR", perSeat: true, period: "year" }))).toBe(
      "€9.50 per seat per year",
    );
    expect(formatPrice(plan("A", 0))).toBe("free");
    expect(formatPrice(plan("A", null))).toBe("contact sales");
    expect(formatPrice(plan("A", 199, { period: "once" }))).toBe("$199 one-time");
  });

  it("state the change with its values before and after", () => {
    const [change] = diffFacts(pricing(plan("Pro", 30)), pricing(plan("Pro", 24)));
    if (!change) throw new Error("expected a change");
    expect(titleOf(change, "Acme")).toBe(
      "Acme: Pro price fell 20% from $30 per month to $24 per month",
    );
    expect(summarize(change, "acme.com")).toBe(
      "acme.com lowered the price of its Pro plan from $30 per month to $24 per month (-20%) (https://acme.com/pricing).",
    );
    const [closed] = diffFacts(hiring(job("AE", "Sales")), hiring());
    if (!closed) throw new Error("expected a change");
    expect(summarize(closed, "acme.com")).toBe(
      "acme.com closed 1 role: AE. No openings remain in Sales.",
    );
  });
});
