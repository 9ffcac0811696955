import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CompetitorEvent } from "../../lib/competitors/events.js";
import { competitorsRoutes } from "../../lib/competitors/routes.js";
import { screenshotKey } from "../../lib/competitors/screenshots.js";
import type { Snapshot } from "../../lib/competitors/snapshot.js";
import { DomainError } from "../../lib/errors.js";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import { roomyQuotas } from "../support/aws.js";
import { respond, startSite } from "../support/sites.js";
import { type RenderedWorld, scriptedHome, startRenderedWorld } from "./scripted-site.js";

/**
 * Screenshots as the evidence of competitor events, with the real browser: a check keeps a JPEG of
 * each page it read a section from (a page rendered for its scripts, and a static page rendered
 * for its shot alone), an event links the shots of its page before and after the change, and the
 * API serves them to their workspace only. Without a browser checks run as before, with no shots.
 */

const WS = "ws_shots";
const OTHER = "ws_shots_other";

const testAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  const workspaceId = c.req.header("x-test-workspace");
  if (!workspaceId) throw new DomainError("unauthorized", "No workspace");
  c.set("workspaceId", workspaceId);
  await next();
};

/** JPEG files start with the SOI marker and an APPn or DQT segment. */
const isJpeg = (bytes: Uint8Array) => bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;

describe("competitor screenshots", () => {
  let world: RenderedWorld;

  beforeAll(async () => {
    world = await startRenderedWorld();
  });
  afterAll(() => world?.close());

  it("keeps shots of the pages read, links them before and after, and serves them to the workspace", async () => {
    const { aws } = world;
    const shots = world.services();
    const { competitors, checker, snapshots, events } = shots;
    const item = await competitors.create(WS, `${world.site.origin}/`);
    expect((await checker.check(WS, item.id)).ok).toBe(true);
    const baseline = (await snapshots.load(
      (
        await competitors.get(WS, item.id)
      ).snapshotKey as string,
    )) as Snapshot;
    // The pricing page was rendered for its scripts; the static homepage for its shot alone.
    const first = baseline.screenshots ?? {};
    expect(first.pricing).toMatch(/^shot_/);
    expect(first.messaging).toMatch(/^shot_/);
    expect(first.pricing).not.toBe(first.messaging);
    for (const id of [first.pricing, first.messaging] as string[]) {
      const stored = await aws.blobs.get(screenshotKey(WS, item.id, id));
      expect(stored && isJpeg(stored)).toBe(true);
      expect(stored?.byteLength).toBeLessThanOrEqual(600 * 1024);
    }

    world.plans = [
      { name: "Starter", price: 39 },
      { name: "Growth", price: 99 },
    ];
    expect(await checker.check(WS, item.id)).toMatchObject({ ok: true, changed: true });
    const after = (await snapshots.load(
      (
        await competitors.get(WS, item.id)
      ).snapshotKey as string,
    )) as Snapshot;
    const second = after.screenshots ?? {};
    expect(second.pricing).toMatch(/^shot_/);
    expect(second.pricing).not.toBe(first.pricing);

    const { items } = await events.list(WS, { type: ["pricing"] }, 10);
    expect(items).toHaveLength(1);
    const url = (id: string | undefined) =>
      `/api/intel/competitors/${item.id}/screenshots/${id as string}`;
    const app = createServiceApp({
      authenticate: testAuth,
      modules: [
        competitorsRoutes({
          ...shots,
          checksQueue: aws.queue("checks"),
          quotas: roomyQuotas(aws.table),
          allowPrivate: true,
        }),
      ],
    });
    const get = (path: string, workspace = WS) =>
      app.request(path, { headers: { "x-test-workspace": workspace } });

    const listed = (await (await get("/api/intel/events?type=pricing")).json()) as {
      events: CompetitorEvent[];
    };
    expect(listed.events[0]?.id).toBe(items[0]?.id);
    expect(listed.events[0]?.screenshots).toEqual({
      before: url(first.pricing),
      after: url(second.pricing),
    });

    const served = await get(url(second.pricing));
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("image/jpeg");
    const body = new Uint8Array(await served.arrayBuffer());
    expect(body).toEqual(await aws.blobs.get(screenshotKey(WS, item.id, second.pricing as string)));

    // Another workspace, an unknown shot and a malformed id are all not found.
    const refused = [
      await get(url(second.pricing), OTHER),
      await get(url("shot_01JD3Q8Y5V2N6W3KX9T7M4PZ8R")),
      await get(url("..%2F..%2Fsnapshots")),
    ];
    for (const res of refused) {
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toContain("application/json");
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
    }
  });

  it("checks without a browser as before, with no shots", async () => {
    const { aws } = world;
    const { competitors, checker, events } = world.services(false);
    const plain = await startSite({ "/": respond(scriptedHome("Sites that write themselves")) });
    try {
      const item = await competitors.create(WS, `${plain.origin}/`);
      expect((await checker.check(WS, item.id)).ok).toBe(true);
      plain.route("/", respond(scriptedHome("Sites that publish themselves")));
      expect(await checker.check(WS, item.id)).toMatchObject({ ok: true, changed: true });
      const { items } = await events.list(WS, { competitorId: [item.id] }, 10);
      expect(items.length).toBeGreaterThan(0);
      expect(items[0]?.screenshots).toEqual({ before: null, after: null });
      expect(await aws.blobs.list(`ws/${WS}/competitors/${item.id}/screenshots/`)).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
