import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueWorkers } from "../../functions/manifest.js";
import {
  CAPACITY_ASSUMPTIONS,
  type CapacityAssumptions,
  CHECK_CAPACITY,
  checkCapacity,
  deferDelaySeconds,
  sweepDelaySeconds,
} from "../../lib/competitors/capacity.js";
import { CheckSlots } from "../../lib/competitors/check-slots.js";
import { startAws, type TestAws } from "../support/aws.js";

const model = (change: Partial<CapacityAssumptions>) =>
  checkCapacity({ ...CAPACITY_ASSUMPTIONS, ...change });

describe("the check worker's capacity model", () => {
  it("finishes 1,000 tenants × 20 competitors within two hours, inside the account's share", () => {
    expect(CHECK_CAPACITY.checks).toBe(20_000);
    expect(CHECK_CAPACITY.sweepHours).toBeLessThanOrEqual(2);
    // Even if every check took the p95, the sweep would end within the night.
    const atP95 = (20_000 * CAPACITY_ASSUMPTIONS.checkSeconds.p95) / CHECK_CAPACITY.slots / 3600;
    expect(atP95).toBeLessThan(3);
    expect(CHECK_CAPACITY.maxConcurrency).toBeLessThanOrEqual(
      CAPACITY_ASSUMPTIONS.accountConcurrency * CAPACITY_ASSUMPTIONS.accountShare,
    );
  });

  it("is what the manifest runs the check worker with", () => {
    const worker = queueWorkers.find((w) => w.name === "competitor-check-worker");
    expect(worker).toMatchObject({
      batchSize: CHECK_CAPACITY.batchSize,
      maxConcurrency: CHECK_CAPACITY.maxConcurrency,
    });
    // A hanging site costs its check's bound, far below the invocation's timeout.
    expect(CAPACITY_ASSUMPTIONS.checkBoundSeconds * 2).toBeLessThanOrEqual(
      worker?.timeoutSeconds ?? 0,
    );
  });

  it("leaves every workspace a small share, and the others at least one invocation", () => {
    expect(CHECK_CAPACITY.workspaceSlots).toBeGreaterThanOrEqual(1);
    expect(CHECK_CAPACITY.workspaceSlots).toBeLessThan(CHECK_CAPACITY.maxConcurrency);
    expect(model({ tenants: 10 }).workspaceSlots).toBeLessThan(
      model({ tenants: 10 }).maxConcurrency,
    );
  });

  it("scales the worker with the load it assumes", () => {
    const base = CHECK_CAPACITY;
    expect(model({ tenants: 1_500 }).maxConcurrency).toBeGreaterThan(base.maxConcurrency);
    expect(model({ tenants: 500 }).maxConcurrency).toBeLessThan(base.maxConcurrency);
    expect(model({ sweepWindowSeconds: 5400 }).maxConcurrency).toBeGreaterThan(base.maxConcurrency);
    expect(model({ checkSeconds: { p50: 30, p95: 60 } }).maxConcurrency).toBeGreaterThan(
      base.maxConcurrency,
    );
    const wider = model({ checksPerInvocation: 4 });
    expect(wider.batchSize).toBe(4);
    expect(wider.maxConcurrency).toBeLessThan(base.maxConcurrency);
    // The same 2 hours whatever the batch: the slots are what counts.
    expect(wider.sweepHours).toBeLessThanOrEqual(2);
    expect(model({ tenants: 1_500 }).sweepHours).toBeLessThanOrEqual(2);
  });

  it("refuses assumptions the account cannot run", () => {
    expect(() => model({ tenants: 2_000 })).toThrow(/account share allows/);
    expect(model({ tenants: 2_000, accountShare: 0.2 }).sweepHours).toBeLessThanOrEqual(2);
  });

  it("spreads the sweep as long as the slots need for it, and never past the next run", () => {
    // Checks arrive no faster than the worker ends them at the mean...
    expect(CHECK_CAPACITY.spreadSeconds).toBeGreaterThanOrEqual(
      Math.min(CHECK_CAPACITY.sweepHours * 3600, CAPACITY_ASSUMPTIONS.sweepIntervalSeconds),
    );
    // ... beyond SQS's longest delay, and within the sweep's own period.
    expect(CHECK_CAPACITY.spreadSeconds).toBeGreaterThan(900);
    expect(CHECK_CAPACITY.spreadSeconds).toBeLessThanOrEqual(
      CAPACITY_ASSUMPTIONS.sweepIntervalSeconds,
    );
    expect(model({ sweepIntervalSeconds: 1800 }).spreadSeconds).toBe(1800);
    expect(model({ sweepIntervalSeconds: 7200 }).spreadSeconds).toBe(
      Math.ceil(CHECK_CAPACITY.sweepHours * 3600),
    );
  });

  it("spreads the sweep so a host many workspaces track is not read faster than politeness", () => {
    expect(CHECK_CAPACITY.hostRequestsPerSecond).toBeLessThanOrEqual(
      1000 / CAPACITY_ASSUMPTIONS.politenessMs,
    );
    expect(model({ tenantsPerHost: 100 }).hostRequestsPerSecond).toBeGreaterThan(
      CHECK_CAPACITY.hostRequestsPerSecond,
    );
    const delays = Array.from({ length: 2_000 }, (_, i) => sweepDelaySeconds(`ws_${i}`, "cmp_1"));
    expect(Math.min(...delays)).toBe(0);
    expect(Math.max(...delays)).toBeLessThan(CHECK_CAPACITY.spreadSeconds);
    expect(Math.max(...delays)).toBeGreaterThan(900);
    // Every step of the spread gets some checks, none a burst: within 3× the even share.
    const perStep = new Map<number, number>();
    for (const delay of delays) perStep.set(delay, (perStep.get(delay) ?? 0) + 1);
    expect(perStep.size).toBe(CHECK_CAPACITY.spreadSteps);
    const even = delays.length / CHECK_CAPACITY.spreadSteps;
    expect(Math.max(...perStep.values())).toBeLessThan(3 * even);
    // The same competitor gets the same step every night.
    expect(sweepDelaySeconds("ws_1", "cmp_1")).toBe(sweepDelaySeconds("ws_1", "cmp_1"));
    expect(sweepDelaySeconds("ws_1", "cmp_1", { ...CHECK_CAPACITY, spreadSeconds: 0 })).toBe(0);
  });

  it("puts a deferred check back for longer each time, long enough for the longest list", () => {
    const waits = Array.from({ length: CHECK_CAPACITY.maxDeferrals }, (_, i) =>
      deferDelaySeconds(i),
    );
    expect(waits[0]).toBe(CHECK_CAPACITY.deferSeconds);
    expect(waits.every((w, i) => i === 0 || w >= (waits[i - 1] ?? 0))).toBe(true);
    expect(Math.max(...waits)).toBeLessThanOrEqual(900);
    // Each wait is at least half its longest (jittered).
    const waited = waits.reduce((a, b) => a + b / 2, 0);
    const drain =
      (CAPACITY_ASSUMPTIONS.maxCompetitorsPerTenant / CHECK_CAPACITY.workspaceSlots) *
      CAPACITY_ASSUMPTIONS.checkBoundSeconds;
    expect(waited).toBeGreaterThanOrEqual(drain);
  });
});

describe("a workspace's check slots", () => {
  let aws: TestAws;
  let slots: CheckSlots;
  const t0 = 1_750_000_000_000;

  beforeAll(async () => {
    aws = await startAws();
    slots = new CheckSlots(aws.table, 2);
  });
  afterAll(() => aws.close());

  it("lets a workspace hold its slots and no more, while another workspace still gets its own", async () => {
    const first = await slots.acquire("ws_full", t0, t0 + 60_000);
    const second = await slots.acquire("ws_full", t0, t0 + 60_000);
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(first?.slot).not.toBe(second?.slot);
    expect(await slots.acquire("ws_full", t0 + 1, t0 + 60_000)).toBeUndefined();
    expect(await slots.acquire("ws_other", t0, t0 + 60_000)).toBeDefined();
  });

  it("frees a slot when its check gives it back", async () => {
    const lease = await slots.acquire("ws_release", t0, t0 + 60_000);
    await slots.acquire("ws_release", t0, t0 + 60_000);
    if (!lease) throw new Error("a free workspace has a slot");
    await slots.release(lease);
    expect(await slots.acquire("ws_release", t0 + 1, t0 + 60_000)).toBeDefined();
  });

  it("frees a crashed check's slot when its lease ends, and the late release frees nothing", async () => {
    const crashed = await slots.acquire("ws_crash", t0, t0 + 60_000);
    await slots.acquire("ws_crash", t0, t0 + 600_000);
    expect(await slots.acquire("ws_crash", t0 + 59_999, t0 + 120_000)).toBeUndefined();
    const taken = await slots.acquire("ws_crash", t0 + 60_001, t0 + 120_000);
    expect(taken?.slot).toBe(crashed?.slot);
    // The crashed check comes back late: its release must not free the new holder's slot.
    if (crashed) await slots.release(crashed);
    expect(await slots.acquire("ws_crash", t0 + 60_002, t0 + 120_000)).toBeUndefined();
  });
});
