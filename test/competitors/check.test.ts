import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { competitorBlobPrefix } from "../../lib/competitors/snapshot.js";
import { DomainError } from "../../lib/errors.js";
import { baseSite, type SiteState } from "../support/competitor-site.js";
import { respond, startSite } from "../support/sites.js";
import {
  closedPort,
  eventFeed,
  servicesFor,
  startWorld,
  TEST_LIMITS,
  type World,
} from "./world.js";

const WS = "ws_check";

describe("checking a competitor's site", () => {
  let world: World;
  let competitorId: string;
  let newEvents: ReturnType<typeof eventFeed>;
  const check = () => world.services.checker.check(WS, competitorId);
  const edit = (patch: Partial<SiteState>) => Object.assign(world.site.state, patch);
  /** Sets a plan's price; no price makes it a "contact sales" plan. */
  const reprice = (name: string, price?: string) =>
    edit({
      plans: world.site.state.plans.map((plan) =>
        plan.name === name
          ? { name, features: plan.features ?? [], ...(price ? { price } : {}) }
          : plan,
      ),
    });

  beforeAll(async () => {
    world = await startWorld();
    // A bare domain: the check tries https first and falls back to http, which the site speaks.
    competitorId = (await world.services.competitors.create(WS, world.host)).id;
    newEvents = eventFeed(world, WS);
  });
  afterAll(() => world.close());

  it("records a baseline on the first check, with no event", async () => {
    const result = await check();
    expect(result).toMatchObject({ ok: true, changed: false });
    expect(result.summary).toMatch(
      /^Baseline recorded for 127\.0\.0\.1:\d+: 3 plans, 3 job postings, 2 posts/,
    );
    expect(await newEvents()).toEqual([]);
    const competitor = await world.services.competitors.get(WS, competitorId);
    expect(competitor.lastAnalyzedAt).not.toBeNull();
    // The site watch keeps its list of pages beside the snapshots.
    const snapshots = await world.aws.blobs.list(
      `${competitorBlobPrefix(WS, competitorId)}snapshots/`,
    );
    expect(snapshots).toHaveLength(1);
  });

  it("reads robots.txt first, stays within its request budget, one request at a time", () => {
    expect(world.site.requests[0]).toBe("/robots.txt");
    expect(world.site.requests.length).toBeLessThanOrEqual(TEST_LIMITS.maxFetches);
    expect(world.site.maxInFlight).toBe(1);
  });

  it.each<[string, Partial<SiteState>]>([
    ["a new date", { renderedAt: "2025-03-02T08:30:00Z" }],
    ["a rotated testimonial", { testimonial: "Best tool we bought. (Bob, Hooli)" }],
    ["a new CSRF token", { csrf: "tok-2" }],
    ["a moving counter", { teams: 10_874 }],
    ["reordered plans, jobs, posts and claims", { reversed: true }],
  ])("sees no change in %s", async (_, patch) => {
    edit(patch);
    const result = await check();
    expect(result).toMatchObject({ ok: true, changed: false });
    expect(result.summary).toMatch(/^No changes on/);
    expect(await newEvents()).toEqual([]);
  });

  it("reports a price rise as a high pricing event with the prices before and after", async () => {
    reprice("Starter", "$12");
    const result = await check();
    expect(result).toMatchObject({ ok: true, changed: true });
    const [event, ...rest] = await newEvents();
    expect(rest).toEqual([]);
    expect(event).toMatchObject({
      competitorId,
      type: "pricing",
      severity: "high",
      title: "Acme: Starter price rose 20% from $10 per month to $12 per month",
      isRead: false,
      isActioned: false,
      details: {
        change: "price_increase",
        subject: "Starter",
        before: { name: "Starter", price: 10, currency: "USD", period: "month" },
        after: { name: "Starter", price: 12, currency: "USD", period: "month" },
        percent: 20,
      },
      change: {
        kind: "price_increase",
        before: { plan: "Starter", amount: 10, currency: "USD", period: "month" },
        after: { plan: "Starter", amount: 12, currency: "USD", period: "month" },
        percentChange: 20,
        confidence: 1,
        count: 1,
      },
    });
    expect(event?.aiBrief).toContain(
      "raised the price of its Starter plan from $10 per month to $12 per month (+20%)",
    );
    expect(result.summary).toContain("Starter price rose");
  });

  it("rates a price rise of a quarter or more critical", async () => {
    reprice("Pro", "$49");
    await check();
    expect(await newEvents()).toMatchObject([
      {
        type: "pricing",
        severity: "critical",
        title: "Acme: Pro price rose 69% from $29 per month to $49 per month",
        change: { kind: "price_increase", percentChange: 69 },
      },
    ]);
  });

  it("reports a new plan", async () => {
    edit({ plans: [...world.site.state.plans, { name: "Scale", price: "$99" }] });
    await check();
    expect(await newEvents()).toMatchObject([
      {
        type: "pricing",
        severity: "high",
        title: "Acme: new plan Scale ($99 per month)",
        details: { change: "plan_added", before: null, after: { name: "Scale", price: 99 } },
      },
    ]);
  });

  it("reports a plan that drops its price for contact sales", async () => {
    reprice("Scale");
    await check();
    expect(await newEvents()).toMatchObject([
      {
        type: "pricing",
        severity: "high",
        title: "Acme: Scale plan no longer shows a price (was $99 per month)",
        details: {
          change: "moved_to_contact_sales",
          before: { price: 99, contactSales: false },
          after: { price: null, contactSales: true },
        },
      },
    ]);
  });

  it("reports new and closed postings on the job board, a new team apart", async () => {
    edit({
      jobs: [
        ...world.site.state.jobs.filter((job) => job.team !== "Sales"),
        { id: 201, title: "Data Scientist", team: "Data", location: "Remote" },
        { id: 202, title: "Staff Engineer", team: "Engineering", location: "Berlin" },
      ],
    });
    await check();
    const events = await newEvents();
    const byChange = Object.fromEntries(events.map((e) => [e.details.change, e]));
    expect(Object.keys(byChange).sort()).toEqual([
      "new_department",
      "roles_added",
      "roles_removed",
    ]);
    expect(byChange.new_department).toMatchObject({
      type: "hiring",
      severity: "medium",
      title: "Acme: hiring in a new team, Data (1 role)",
      details: { after: [{ title: "Data Scientist", team: "Data", location: "Remote" }] },
    });
    expect(byChange.roles_added).toMatchObject({
      type: "hiring",
      severity: "low",
      details: { after: [{ title: "Staff Engineer", team: "Engineering" }] },
    });
    expect(byChange.roles_removed).toMatchObject({
      type: "hiring",
      severity: "medium",
      details: { before: [{ title: "Account Executive", team: "Sales" }], closedTeams: ["Sales"] },
    });
  });

  it("reports a new blog post as low-severity content", async () => {
    const post = { slug: "ai-pages", title: "AI-written landing pages", date: "2025-03-01" };
    edit({ posts: [...world.site.state.posts, post] });
    await check();
    expect(await newEvents()).toMatchObject([
      {
        type: "content",
        severity: "low",
        title: 'Acme: new post "AI-written landing pages"',
        details: {
          change: "post_published",
          after: {
            title: "AI-written landing pages",
            date: "2025-03-01",
            url: `${world.site.origin}/blog/ai-pages`,
          },
        },
      },
    ]);
  });

  it("reports a headline rewrite as messaging", async () => {
    edit({ headline: "Marketing sites that write themselves" });
    await check();
    expect(await newEvents()).toMatchObject([
      {
        type: "messaging",
        severity: "medium",
        title: "Acme: homepage headline changed",
        change: {
          kind: "messaging_changed",
          before: { headline: "The fastest way to ship marketing sites" },
          after: { headline: "Marketing sites that write themselves" },
        },
      },
    ]);
  });

  it("keeps a page's last known state when it fails, instead of reporting removals", async () => {
    world.site.failing.add("/pricing");
    const result = await check();
    world.site.failing.delete("/pricing");
    expect(result).toMatchObject({ ok: true, changed: false });
    expect(result.summary).toContain("The pricing page could not be read this time");
    expect(await newEvents()).toEqual([]);
    expect(await check()).toMatchObject({ ok: true, changed: false });
    expect(await newEvents()).toEqual([]);
  });

  it("never fetches a page robots.txt disallows, keeping its last known state", async () => {
    edit({ disallow: ["/pricing"] });
    const seen = world.site.requests.length;
    const result = await check();
    edit({ disallow: [] });
    expect(world.site.requests.slice(seen)).not.toContain("/pricing");
    expect(result.summary).toContain("The pricing page could not be read this time");
    expect(await newEvents()).toEqual([]);
  });

  it("refuses a second check of the same competitor while one runs", async () => {
    const outcomes = await Promise.allSettled([check(), check()]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(["fulfilled", "rejected"]);
    const failure = outcomes.find((o) => o.status === "rejected");
    expect(failure?.reason).toBeInstanceOf(DomainError);
    expect(failure?.reason).toMatchObject({ code: "conflict" });
  });

  it("answers ok:false with the reason for an unreachable site, with no event", async () => {
    const down = `http://127.0.0.1:${await closedPort()}/`;
    const gone = await world.services.competitors.create(WS, down);
    const result = await world.services.checker.check(WS, gone.id);
    expect(result.ok).toBe(false);
    expect(result.changed).toBe(false);
    expect(result.summary).toMatch(/could not be checked: .*could not be reached/);
    expect(await newEvents()).toEqual([]);
    expect((await world.services.competitors.get(WS, gone.id)).lastAnalyzedAt).toBeNull();
  });

  it("answers ok:false for a homepage nested too deep to read, with no event", async () => {
    const deep = await startSite({ "/": respond(`${"<div>".repeat(5_000)}<h1>Buried</h1>`) });
    try {
      const nested = await world.services.competitors.create(WS, `${deep.origin}/`);
      const result = await world.services.checker.check(WS, nested.id);
      expect(result).toMatchObject({ ok: false, changed: false });
      expect(result.summary).toContain("The page nests elements more than 256 levels deep");
      expect(await newEvents()).toEqual([]);
    } finally {
      await deep.close();
    }
  });
});

describe("event briefs", () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(() => world.close());

  it("come from the injected writer, and from the diff when the writer fails", async () => {
    let fail = false;
    const services = servicesFor(world.aws, world.site, {
      briefWriter: async ({ title, change }) => {
        if (fail) throw new Error("model unavailable");
        return `Model brief: ${title} (${change.kind})`;
      },
    });
    const ws = "ws_briefs";
    const { id } = await services.competitors.create(ws, world.site.origin);
    await services.checker.check(ws, id);
    world.site.state = { ...baseSite(), headline: "A new headline" };
    await services.checker.check(ws, id);
    fail = true;
    world.site.state = { ...baseSite(), headline: "Another headline" };
    await services.checker.check(ws, id);
    const { items } = await services.events.list(ws, {}, 10);
    expect(items.map((e) => e.aiBrief)).toEqual([
      expect.stringMatching(
        /rewrote its homepage headline from "A new headline" to "Another headline"/,
      ),
      "Model brief: Acme: homepage headline changed (messaging_changed)",
    ]);
  });
});
