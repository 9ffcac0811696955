import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  boundChanges,
  MAX_EVENTS_PER_KIND,
  untrustedPricing,
} from "../../lib/competitors/changes.js";
import { MAX_BRIEFS_PER_CHECK } from "../../lib/competitors/check.js";
import { diffFacts } from "../../lib/competitors/diff.js";
import type { Plan } from "../../lib/competitors/extract/pricing.js";
import type { Facts } from "../../lib/competitors/snapshot.js";
import { servicesFor, startWorld, type World } from "./world.js";

const plan = (name: string, price: number): Plan => ({
  name,
  price,
  currency: "USD",
  period: "month",
  perSeat: false,
  contactSales: false,
});
const plans = (n: number, price = (i: number) => 10 + i): Facts => ({
  pricing: {
    url: "https://acme.com/pricing",
    plans: Array.from({ length: n }, (_, i) => plan(`Plan ${i}`, price(i))),
  },
});

describe("a check's bound on events of one kind", () => {
  it("keeps the largest moves apart and folds the rest into one", () => {
    const changes = diffFacts(
      plans(300),
      plans(300, (i) => (10 + i) * (i % 2 ? 2 : 1.1)),
    );
    const parts = boundChanges(changes);
    expect(parts).toHaveLength(MAX_EVENTS_PER_KIND);
    const folded = parts.filter((part) => "folded" in part);
    expect(folded.map((part) => [part.kind, part.changes.length])).toEqual([
      ["price_increase", 300 - (MAX_EVENTS_PER_KIND - 1)],
    ]);
    expect(
      parts.filter((part) => !("folded" in part)).every((c) => c.kind === "price_increase"),
    ).toBe(true);
    // The ones kept apart are the most severe: doubled prices, every one critical.
    for (const part of parts) if (!("folded" in part)) expect(part).toMatchObject({ percent: 100 });
  });

  it("leaves a kind at the bound as it is", () => {
    const changes = diffFacts(
      plans(MAX_EVENTS_PER_KIND),
      plans(MAX_EVENTS_PER_KIND, () => 99),
    );
    expect(boundChanges(changes)).toEqual(changes);
  });
});

describe("a pricing extraction not to trust", () => {
  it.each([
    [4, 2, true],
    [4, 3, false],
    [3, 1, true],
    [2, 1, false],
    [2, 0, true],
    [1, 0, false],
  ])("%i known plans, %i found again: %s", (known, found, untrusted) => {
    expect(untrustedPricing(plans(known), plans(found))).toBe(untrusted);
  });

  it("is no pricing page at all, which carries over as a page that failed", () => {
    expect(untrustedPricing(plans(4), {})).toBe(false);
  });
});

describe("a check of a page listing 300 plans whose prices all change", () => {
  let world: World;
  let briefs = 0;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(() => world.close());

  it("raises a bounded number of events and model calls", async () => {
    const services = servicesFor(world.aws, world.site, {
      briefWriter: async ({ title }) => {
        briefs++;
        return `Brief: ${title}`;
      },
    });
    const many = (price: number) =>
      Array.from({ length: 300 }, (_, i) => ({ name: `Plan ${i}`, price: `$${price + i}` }));
    world.site.state.plans = many(10);
    const { id } = await services.competitors.create("ws_many", world.site.origin);
    await services.checker.check("ws_many", id);
    world.site.state.plans = many(20);
    await services.checker.check("ws_many", id);
    const { items } = await services.events.list("ws_many", { type: ["pricing"] }, 100);
    expect(items).toHaveLength(MAX_EVENTS_PER_KIND);
    expect(items.at(-1)?.change).toMatchObject({ kind: "price_increase", count: 300 - 4 });
    expect(items.at(-1)?.title).toBe("Acme: 296 more price increases");
    expect(briefs).toBeLessThanOrEqual(MAX_BRIEFS_PER_CHECK);
  });
});
