import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { DynamoWriterLock, WriterLockLost, WriterLockTimeout } from "../../lib/search/index.js";
import { type Item, wsKey } from "../../lib/store/table.js";
import { type SearchStores, startSearchStores } from "./support.js";

let stores: SearchStores;
beforeAll(async () => {
  stores = await startSearchStores();
});
afterAll(() => stores.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LEASE_SK = "SEARCH#WRITER";

/** Polls until `done`, on real timers (vi.waitFor would move a faked clock); no time limit of its own. */
async function until(done: () => boolean) {
  while (!done()) await sleep(5);
}

/**
 * Waits until the lease of `update`'s table has been renewed since now: every renewal asked before
 * has been answered, then one asked after that. However long renewals take on this machine, none
 * from before is still on its way to overwrite the lease.
 */
async function renewedSince(update: MockInstance) {
  const results = () => update.mock.settledResults;
  const before = update.mock.calls.length;
  await until(() =>
    results()
      .slice(0, before)
      .every((result) => result.type !== "incomplete"),
  );
  const after = update.mock.calls.length;
  await until(() =>
    results()
      .slice(after)
      .some((result) => result.type === "fulfilled"),
  );
}

/** Runs `fn`s under locks and records how many ran at once at most. */
function overlapMeter() {
  let running = 0;
  let most = 0;
  return {
    get most() {
      return most;
    },
    async run(ms: number) {
      running++;
      most = Math.max(most, running);
      await sleep(ms);
      running--;
    },
  };
}

describe("the DynamoDB writer lock", () => {
  it("lets one writer of a workspace in at a time, across lock instances (processes)", async () => {
    const meter = overlapMeter();
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        new DynamoWriterLock(stores.table).withLock("ws_one", async () => {
          await meter.run(40);
          order.push(i);
        }),
      ),
    );
    expect(meter.most).toBe(1);
    expect(order.sort()).toEqual([0, 1, 2, 3, 4]);
    expect(await stores.table.get(wsKey("ws_one"), LEASE_SK)).toBeUndefined();
  });

  it("lets writers of different workspaces run at once", async () => {
    // Each writer, once in, waits for all three to be in: they end only if they held their locks
    // at the same time, however long taking a lock takes on this machine.
    const workspaces = ["ws_p", "ws_q", "ws_r"];
    let inside = 0;
    let allIn: (value?: undefined) => void = () => undefined;
    const together = new Promise<undefined>((resolve) => {
      allIn = resolve;
    });
    await Promise.all(
      workspaces.map((ws) =>
        new DynamoWriterLock(stores.table).withLock(ws, async () => {
          if (++inside === workspaces.length) allIn();
          await together;
        }),
      ),
    );
    expect(inside).toBe(workspaces.length);
  });

  it("renews a long write's lease, so no one enters after the lease time", async () => {
    // The leases' clock stands still and moves only by hand (Date only: renewals, waits and I/O
    // run in real time): the first lease has expired when this test says so, on any machine.
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    const update = vi.spyOn(stores.table, "update");
    try {
      const options = { leaseMs: 300, renewEveryMs: 20 };
      const expiry = async () =>
        (await stores.table.get<Item & { expires_at: number }>(wsKey("ws_long"), LEASE_SK))
          ?.expires_at;
      const second = await new DynamoWriterLock(stores.table, options).withLock(
        "ws_long",
        async () => {
          expect(await expiry()).toBe(start + 300);
          vi.setSystemTime(start + 250);
          await renewedSince(update);
          expect(await expiry()).toBe(start + 550);
          // Past the lease as first taken, within the renewed one: a second writer stays out.
          vi.setSystemTime(start + 500);
          return new DynamoWriterLock(stores.table, { ...options, waitMs: 0 })
            .withLock("ws_long", async () => "entered")
            .catch((err: unknown) => err);
        },
      );
      expect(second).toBeInstanceOf(WriterLockTimeout);
    } finally {
      update.mockRestore();
      vi.useRealTimers();
    }
  });

  it("takes over a crashed writer's lease once it expires, and not before", async () => {
    // The leases' clock moves only by hand (Date only): to the lease's last millisecond, then past.
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    try {
      await stores.table.put({
        pk: wsKey("ws_crashed"),
        sk: LEASE_SK,
        owner: "a crashed process",
        expires_at: start + 600,
      });
      vi.setSystemTime(start + 600);
      await expect(
        new DynamoWriterLock(stores.table, { waitMs: 0 }).withLock("ws_crashed", async () => 1),
      ).rejects.toBeInstanceOf(WriterLockTimeout);
      vi.setSystemTime(start + 601);
      expect(
        await new DynamoWriterLock(stores.table, { waitMs: 0 }).withLock(
          "ws_crashed",
          async () => 2,
        ),
      ).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("releases the lease when the write fails", async () => {
    const lock = new DynamoWriterLock(stores.table, { waitMs: 500 });
    await expect(
      lock.withLock("ws_fails", async () => {
        throw new Error("engine error");
      }),
    ).rejects.toThrow("engine error");
    expect(await lock.withLock("ws_fails", async () => "next")).toBe("next");
  });

  it("reports a lease lost during the write, and never deletes the new owner's", async () => {
    const lock = new DynamoWriterLock(stores.table, { leaseMs: 300, renewEveryMs: 100 });
    const update = vi.spyOn(stores.table, "update");
    try {
      await expect(
        lock.withLock("ws_lost", async () => {
          // Another process took the lease (ours looked expired to it).
          await stores.table.put({
            pk: wsKey("ws_lost"),
            sk: LEASE_SK,
            owner: "the next writer",
            expires_at: Date.now() + 60_000,
          });
          // The write lasts until a renewal asked since has found the lease someone else's.
          await renewedSince(update);
        }),
      ).rejects.toBeInstanceOf(WriterLockLost);
    } finally {
      update.mockRestore();
    }
    expect(await stores.table.get(wsKey("ws_lost"), LEASE_SK)).toMatchObject({
      owner: "the next writer",
    });
  });
});
