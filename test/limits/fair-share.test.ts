import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Checker } from "../../lib/competitors/check.js";
import type { Competitors } from "../../lib/competitors/competitors.js";
import { runQueuedCheck } from "../../lib/competitors/sweep.js";
import { inFairShare, invocationShare } from "../../lib/limits/fair-share.js";
import { deferDelaySeconds, workerShare } from "../../lib/limits/shares.js";
import { WORKER_SHARES } from "../../lib/limits/worker-shares.js";
import { WorkspaceSlots } from "../../lib/limits/workspace-slots.js";
import type { CheckMessage, IndexMessage } from "../../lib/store/queue.js";
import { startAws, type TestAws } from "../support/aws.js";

const index = (workspaceId: string, deferrals?: number): IndexMessage => ({
  kind: "index",
  workspaceId,
  sourceId: "src_1",
  revision: 1,
  ...(deferrals === undefined ? {} : { deferrals }),
});

describe("a workspace's share of a shared worker", () => {
  let aws: TestAws;
  const t0 = 1_750_000_000_000;

  beforeAll(async () => {
    aws = await startAws();
  });
  afterAll(() => aws.close());

  it("gives one workspace its slots and no more when forty messages race for them", async () => {
    const slots = new WorkspaceSlots(aws.table, "RACESLOT#", 3);
    const leases = await Promise.all(
      Array.from({ length: 40 }, () => slots.acquire("ws_race", t0, t0 + 60_000)),
    );
    const held = leases.filter((l) => l !== undefined);
    expect(held).toHaveLength(3);
    expect(new Set(held.map((l) => l?.slot))).toEqual(new Set([0, 1, 2]));
    // Another workspace's slots are its own items: the race took none of them.
    expect(await slots.acquire("ws_calm", t0, t0 + 60_000)).toBeDefined();
    // Another worker's slots of the same workspace are apart too.
    expect(
      await new WorkspaceSlots(aws.table, "OTHERSLOT#", 1).acquire("ws_race", t0, t0 + 1),
    ).toBeDefined();
  });

  it("runs a message in a free slot and gives the slot back after, even when the work throws", async () => {
    const queue = aws.queue<IndexMessage>("fair-run");
    const share = {
      slots: new WorkspaceSlots(aws.table, "RUNSLOT#", 1),
      queue,
      deferSeconds: 5,
      metrics: { deferred: "SourcesDeferred" },
    } as const;
    expect(await inFairShare(share, index("ws_run"), 60_000, async () => "indexed")).toBe(
      "indexed",
    );
    await expect(
      inFairShare(share, index("ws_run"), 60_000, async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    // Both gave their one slot back: a third runs.
    expect(await inFairShare(share, index("ws_run"), 60_000, async () => "indexed")).toBe(
      "indexed",
    );
    expect(aws.queues.pending("fair-run")).toEqual([]);
  });

  it("runs a batch's records of one workspace in one slot, and puts back the next batch's while it is held", async () => {
    const queue = aws.queue<IndexMessage>("fair-batch");
    const slots = new WorkspaceSlots(aws.table, "BATCHSLOT#", 1);
    const share = {
      slots,
      queue,
      deferSeconds: 5,
      metrics: { deferred: "SourcesDeferred" },
    } as const;
    const first = invocationShare(share, 60_000);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let running = 0;
    // Five records of one workspace in one batch, as the batch processor runs them: together.
    const batch = Promise.all(
      Array.from({ length: 5 }, () =>
        first(index("ws_batch"), async () => {
          running++;
          await held;
          return "indexed";
        }),
      ),
    );
    await expect.poll(() => running).toBe(5);
    // Another invocation (batch) of the same workspace finds its one slot held.
    const second = invocationShare(share, 60_000);
    expect(await second(index("ws_batch"), async () => "ran")).toBe("deferred");
    // Another workspace has slots of its own.
    expect(await second(index("ws_other"), async () => "ran")).toBe("ran");
    release();
    expect(await batch).toEqual(Array(5).fill("indexed"));
    // The last record of the batch gave the slot back.
    expect(await invocationShare(share, 60_000)(index("ws_batch"), async () => "ran")).toBe("ran");
    expect(aws.queues.pending("fair-batch")).toHaveLength(1);
  });

  it("gives a batch's shared slot back when its records throw", async () => {
    const slots = new WorkspaceSlots(aws.table, "THROWSLOT#", 1);
    const share = {
      slots,
      queue: aws.queue<IndexMessage>("fair-throw"),
      deferSeconds: 5,
      metrics: { deferred: "SourcesDeferred" },
    } as const;
    const inShare = invocationShare(share, 60_000);
    const outcomes = await Promise.allSettled([
      inShare(index("ws_throw"), async () => {
        throw new Error("boom");
      }),
      inShare(index("ws_throw"), async () => "indexed"),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "fulfilled"]);
    expect(await invocationShare(share, 60_000)(index("ws_throw"), async () => "ran")).toBe("ran");
  });

  it("puts a message over its workspace's share back in its queue, delayed more each time, and runs nothing", async () => {
    const queue = aws.queue<IndexMessage>("fair-defer");
    const slots = new WorkspaceSlots(aws.table, "DEFERSLOT#", 1);
    const share = {
      slots,
      queue,
      deferSeconds: 7,
      metrics: { deferred: "SourcesDeferred" },
    } as const;
    const now = Date.now();
    const holder = await slots.acquire("ws_busy", now, now + 600_000);
    expect(holder).toBeDefined();
    let ran = 0;
    const before = Date.now();
    const outcome = await inFairShare(share, index("ws_busy", 2), 60_000, async () => ran++);
    const after = Date.now();
    expect(outcome).toBe("deferred");
    expect(ran).toBe(0);
    const [body] = aws.queues.pending("fair-defer");
    expect(JSON.parse(body ?? "{}")).toMatchObject({ workspaceId: "ws_busy", deferrals: 3 });
    // Its third wait: between half and all of 7 s doubled twice (a consumer makes the queue one
    // the driver times).
    aws.queues.consume("fair-defer", async () => ({ batchItemFailures: [] }));
    const due = await aws.queues.settled();
    expect(due).toBeGreaterThanOrEqual(before + 14_000);
    expect(due).toBeLessThanOrEqual(after + 28_000);
    expect(deferDelaySeconds(2, 7)).toBe(28);
    expect(deferDelaySeconds(500, 7)).toBe(900);
  });

  it("drops a message put back too often when the worker gives up, and sends nothing", async () => {
    const queue = aws.queue<IndexMessage>("fair-give-up");
    const slots = new WorkspaceSlots(aws.table, "GIVEUPSLOT#", 1);
    const now = Date.now();
    await slots.acquire("ws_stuck", now, now + 600_000);
    const share = {
      slots,
      queue,
      deferSeconds: 5,
      maxDeferrals: 4,
      metrics: { deferred: "SourcesDeferred" },
    } as const;
    expect(await inFairShare(share, index("ws_stuck", 3), 60_000, async () => "ran")).toBe(
      "deferred",
    );
    expect(await inFairShare(share, index("ws_stuck", 4), 60_000, async () => "ran")).toBe(
      "given up",
    );
    expect(aws.queues.pending("fair-give-up")).toHaveLength(1);
  });

  it("sends a sweep's check due past SQS's longest delay round the queue, taking no slot", async () => {
    const queue = aws.queue<CheckMessage>("checks-not-yet");
    const slots = new WorkspaceSlots(aws.table, "NOTYETSLOT#", 1);
    const now = 1_800_000_000_000;
    let checked = 0;
    const deps = {
      checker: {
        boundMs: () => 60_000,
        check: async () => {
          checked++;
          return { ok: true, changed: false };
        },
      } as unknown as Checker,
      competitors: { find: async () => ({}) } as unknown as Competitors,
      slots,
      queue,
      now: () => now,
    };
    const message: CheckMessage = {
      kind: "competitor-check",
      workspaceId: "ws_later",
      competitorId: "cmp_1",
      requestedAt: new Date(now).toISOString(),
      notBefore: now + 2_000_000,
    };
    expect(await runQueuedCheck(deps, message)).toBe("not yet");
    expect(checked).toBe(0);
    expect(JSON.parse(aws.queues.pending("checks-not-yet")[0] ?? "{}")).toMatchObject({
      notBefore: now + 2_000_000,
    });
    // Its slot is still free, and once due it runs.
    expect(await runQueuedCheck({ ...deps, now: () => now + 2_000_000 }, message)).toBe("checked");
    expect(checked).toBe(1);
  });

  it("leaves the other workspaces at least one invocation of every shared worker", () => {
    for (const worker of Object.values(WORKER_SHARES)) {
      expect(worker.perWorkspace).toBeGreaterThanOrEqual(1);
      expect(worker.perWorkspace).toBeLessThan(worker.maxConcurrency);
    }
    expect(
      workerShare({ maxConcurrency: 2, workspaceShare: 0.9, p50Seconds: 1 }).perWorkspace,
    ).toBe(1);
    expect(workerShare({ maxConcurrency: 100, workspaceShare: 0.05, p50Seconds: 20 })).toEqual({
      perWorkspace: 5,
      deferSeconds: 5,
    });
  });
});
