import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { htmlPage, respond, startSite } from "../support/sites.js";
import { type RenderedWorld, scriptedHome, startRenderedWorld } from "./scripted-site.js";

/**
 * Competitor checks of pages as a browser sees them: a pricing page whose plans a script fills in
 * from JSON is read once rendered, and a site that starts to answer with a bot wall fails its
 * check with the reason, raising no event and keeping its last snapshot.
 */

const WS = "ws_competitor_render";

describe("competitor checks of rendered and walled pages", () => {
  let world: RenderedWorld;
  const home = scriptedHome("Marketing sites that write themselves");

  beforeAll(async () => {
    world = await startRenderedWorld();
  });
  afterAll(() => world?.close());

  it("reads the plans a script renders, and sees their price change", async () => {
    const { competitors, checker, snapshots } = world.services();
    const item = await competitors.create(WS, `${world.site.origin}/`);
    expect((await checker.check(WS, item.id)).ok).toBe(true);
    const first = await competitors.get(WS, item.id);
    const baseline = await snapshots.load(first.snapshotKey as string);
    expect(baseline?.facts.pricing?.plans.map((p) => [p.name, p.price])).toEqual([
      ["Starter", 29],
      ["Growth", 99],
    ]);

    world.plans = [
      { name: "Starter", price: 39 },
      { name: "Growth", price: 99 },
    ];
    const result = await checker.check(WS, item.id);
    expect(result).toMatchObject({ ok: true, changed: true });
    const after = await snapshots.load((await competitors.get(WS, item.id)).snapshotKey as string);
    expect(after?.facts.pricing?.plans[0]).toMatchObject({ name: "Starter", price: 39 });
  });

  it("fails the check of a site that starts to block, with no event and the snapshot kept", async () => {
    const walled = await startSite({ "/": respond(home) });
    try {
      const { competitors, checker, events } = world.services();
      const item = await competitors.create(WS, `${walled.origin}/`);
      expect((await checker.check(WS, item.id)).ok).toBe(true);
      const before = await competitors.get(WS, item.id);
      const eventsBefore = (await events.list(WS, {}, 100)).items.length;

      walled.route(
        "/",
        respond(
          htmlPage("Just a moment...", "<p>Checking your browser before accessing the site.</p>"),
          { "content-type": "text/html", "cf-mitigated": "challenge" },
          403,
        ),
      );
      const result = await checker.check(WS, item.id);
      expect(result).toMatchObject({ ok: false, changed: false });
      expect(result.summary).toContain("answered HTTP 403 with a Cloudflare challenge");
      expect((await events.list(WS, {}, 100)).items.length).toBe(eventsBefore);
      const after = await competitors.get(WS, item.id);
      expect(after.snapshotKey).toBe(before.snapshotKey);
      expect(after.lastAnalyzedAt).toBe(before.lastAnalyzedAt);
    } finally {
      await walled.close();
    }
  });
});
