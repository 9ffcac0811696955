import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Cadence, isDue } from "../../lib/competitors/cadence.js";
import { CHECK_CAPACITY } from "../../lib/competitors/capacity.js";
import { CheckSlots } from "../../lib/competitors/check-slots.js";
import { COMPETITOR_INDEX } from "../../lib/competitors/competitors.js";
import { createCompetitorServices } from "../../lib/competitors/services.js";
import { runQueuedCheck, sweepAll } from "../../lib/competitors/sweep.js";
import { slotOf } from "../../lib/knowledge/sources/schedule.js";
import type { CheckMessage, Queue } from "../../lib/store/queue.js";
import { startAws, type TestAws } from "../support/aws.js";
import { fixtureFetcher, TEST_LIMITS } from "./world.js";

const HOUR = 3_600_000;
/** A Monday, 00:00 UTC: the clock every test moves by hand. */
const MONDAY = Date.UTC(2025, 0, 6);
const hoursOfWeek = Array.from({ length: 168 }, (_, h) => new Date(MONDAY + h * HOUR));
const dueHours = (competitorId: string, cadence?: Cadence) =>
  hoursOfWeek.filter((at) => isDue({ competitorId, cadence }, at)).length;

describe("a competitor's cadence", () => {
  const ids = Array.from({ length: 240 }, (_, i) => `comp_${String(i).padStart(26, "0")}`);

  it("makes an hourly competitor due every hour, a daily one once a day, a weekly one once a week", () => {
    for (const id of ids.slice(0, 20)) {
      expect(dueHours(id, "hourly")).toBe(168);
      expect(dueHours(id, "daily")).toBe(7);
      expect(dueHours(id, "weekly")).toBe(1);
    }
  });

  it("keeps a daily competitor at the same hour every day, its own from its id", () => {
    for (const id of ids.slice(0, 20)) {
      const hours = hoursOfWeek
        .filter((at) => isDue({ competitorId: id, cadence: "daily" }, at))
        .map((at) => at.getUTCHours());
      expect(new Set(hours)).toEqual(new Set([slotOf(id, "daily")]));
    }
  });

  it("treats a competitor tracked before cadences existed as daily", () => {
    for (const id of ids.slice(0, 20)) expect(dueHours(id)).toBe(7);
  });

  it("spreads many competitors over the day and the week instead of one burst", () => {
    const perHour = new Array<number>(24).fill(0);
    const perWeekHour = new Array<number>(168).fill(0);
    for (const id of ids) {
      perHour[slotOf(id, "daily")] = (perHour[slotOf(id, "daily")] ?? 0) + 1;
      perWeekHour[slotOf(id, "weekly")] = (perWeekHour[slotOf(id, "weekly")] ?? 0) + 1;
    }
    // 10 per hour on average: every hour has some, none has a third of the day's.
    expect(Math.min(...perHour)).toBeGreaterThan(0);
    expect(Math.max(...perHour)).toBeLessThan(ids.length / 3);
    expect(perWeekHour.filter((n) => n > 0).length).toBeGreaterThan(100);
  });
});

describe("the hourly sweep", () => {
  let aws: TestAws;
  let services: ReturnType<typeof createCompetitorServices>;
  let queue: Queue<CheckMessage>;
  const ws = "ws_cadence";
  const ids: Record<Cadence, string> = { hourly: "", daily: "", weekly: "" };
  // No spread: every message is queued without a delay, so `pending` shows each at once.
  const capacity = { ...CHECK_CAPACITY, spreadSeconds: 0 };

  beforeAll(async () => {
    aws = await startAws();
    services = createCompetitorServices({
      table: aws.table,
      blobs: aws.blobs,
      fetcher: fixtureFetcher,
      limits: TEST_LIMITS,
    });
    queue = aws.queue<CheckMessage>("checks");
    ids.hourly = (await services.competitors.create(ws, "hourly.example", "hourly")).id;
    ids.daily = (await services.competitors.create(ws, "daily.example")).id;
    ids.weekly = (await services.competitors.create(ws, "weekly.example", "weekly")).id;
  });

  afterAll(() => aws.close());

  /** The competitors one sweep at `at` queues a check of (nothing consumes the queue). */
  async function swept(at: Date): Promise<string[]> {
    const before = aws.queues.pending("checks").length;
    await sweepAll(aws.table, queue, capacity, async () => true, at);
    const fresh = aws.queues.pending("checks").slice(before);
    return fresh.map((body) => (JSON.parse(body) as CheckMessage).competitorId).sort();
  }

  it("queues each competitor in the hours its cadence makes due, and no other", async () => {
    const counts = new Map<string, number>();
    for (const at of hoursOfWeek) {
      for (const id of await swept(at)) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({
      [ids.hourly]: 168,
      [ids.daily]: 7,
      [ids.weekly]: 1,
    });
  });

  it("follows a cadence changed through the record and its index entry alike", async () => {
    const updated = await services.competitors.setCadence(ws, ids.weekly, "hourly");
    expect(updated.cadence).toBe("hourly");
    const index = await aws.table.get(COMPETITOR_INDEX, `${ws}#${ids.weekly}`);
    expect(index?.cadence).toBe("hourly");
    const away = hoursOfWeek.find(
      (at) => !isDue({ competitorId: ids.weekly, cadence: "weekly" }, at),
    );
    expect(await swept(away ?? new Date())).toContain(ids.weekly);
    await services.competitors.setCadence(ws, ids.weekly, "weekly");
    expect(await swept(away ?? new Date())).not.toContain(ids.weekly);
  });

  it("answers not_found for the cadence of a competitor the workspace does not have", async () => {
    await expect(
      services.competitors.setCadence("ws_other", ids.daily, "hourly"),
    ).rejects.toMatchObject({ code: "not_found" });
  });

  it("skips a check that comes due while another check of the competitor runs, queuing nothing", async () => {
    const slots = new CheckSlots(aws.table, 2);
    const now = Date.now();
    // A check of the hourly competitor is running, and holds it for another minute.
    const running = await services.competitors.lease(ws, ids.hourly, now, now + 60_000);
    const message: CheckMessage = {
      kind: "competitor-check",
      workspaceId: ws,
      competitorId: ids.hourly,
      requestedAt: new Date(now).toISOString(),
    };
    const queued = aws.queues.pending("checks").length;
    const outcome = await runQueuedCheck(
      { checker: services.checker, competitors: services.competitors, slots, queue },
      message,
    );
    expect(outcome).toBe("busy");
    expect(aws.queues.pending("checks")).toHaveLength(queued);
    // The running check still holds the competitor, and nothing marked it checked.
    const item = await services.competitors.get(ws, ids.hourly);
    expect(item.checkLeaseUntil).toBe(running.checkLeaseUntil);
    expect(item.lastCheckedAt).toBeNull();
  });

  it("skips an earlier hour's check still queued once a later check has run", async () => {
    const slots = new CheckSlots(aws.table, 2);
    const item = await services.competitors.get(ws, ids.daily);
    const lease = await services.competitors.lease(ws, ids.daily, Date.now(), Date.now() + 1000);
    await services.competitors.release(lease, { lastCheckedAt: new Date().toISOString() });
    const late: CheckMessage = {
      kind: "competitor-check",
      workspaceId: ws,
      competitorId: item.id,
      requestedAt: new Date(Date.now() - HOUR).toISOString(),
    };
    const outcome = await runQueuedCheck(
      { checker: services.checker, competitors: services.competitors, slots, queue },
      late,
    );
    expect(outcome).toBe("done already");
  });
});
