import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCompetitorServices } from "../../lib/competitors/services.js";
import { BrowserRenderer } from "../../lib/web/render/browser.js";
import { startAws, type TestAws } from "../support/aws.js";
import { CHROMIUM } from "../support/browser.js";
import { htmlPage, respond, type Site, startSite } from "../support/sites.js";
import { scriptedHome, startScriptedSite } from "./scripted-site.js";
import { fixtureFetcher, TEST_LIMITS } from "./world.js";

/**
 * Competitor checks of pages as a browser sees them: a pricing page whose plans a script fills in
 * from JSON is read once rendered, and a site that starts to answer with a bot wall fails its
 * check with the reason, raising no event and keeping its last snapshot.
 */

const WS = "ws_competitor_render";

describe("competitor checks of rendered and walled pages", () => {
  let aws: TestAws;
  let site: Site;
  let renderer: BrowserRenderer;
  let plans = [
    { name: "Starter", price: 29 },
    { name: "Growth", price: 99 },
  ];
  const home = scriptedHome("Marketing sites that write themselves");

  const services = () =>
    createCompetitorServices({
      table: aws.table,
      blobs: aws.blobs,
      fetcher: fixtureFetcher,
      limits: TEST_LIMITS,
      renderer,
    });

  beforeAll(async () => {
    aws = await startAws();
    site = await startScriptedSite(() => plans);
    renderer = new BrowserRenderer({ fetcher: fixtureFetcher, executablePath: CHROMIUM });
  });
  afterAll(async () => {
    await renderer.close();
    await site.close();
    await aws.close();
  });

  it("reads the plans a script renders, and sees their price change", async () => {
    const { competitors, checker, snapshots } = services();
    const item = await competitors.create(WS, `${site.origin}/`);
    expect((await checker.check(WS, item.id)).ok).toBe(true);
    const first = await competitors.get(WS, item.id);
    const baseline = await snapshots.load(first.snapshotKey as string);
    expect(baseline?.facts.pricing?.plans.map((p) => [p.name, p.price])).toEqual([
      ["Starter", 29],
      ["Growth", 99],
    ]);

    plans = [
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
      const { competitors, checker, events } = services();
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
