import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoWriterLock, WriterLockLost, WriterLockTimeout } from "../../lib/search/index.js";
import { wsKey } from "../../lib/store/table.js";
import { type SearchStores, startSearchStores } from "./support.js";

let stores: SearchStores;
beforeAll(async () => {
  stores = await startSearchStores();
});
afterAll(() => stores.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LEASE_SK = "SEARCH#WRITER";

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
    const meter = overlapMeter();
    await Promise.all(
      ["ws_p", "ws_q", "ws_r"].map((ws) =>
        new DynamoWriterLock(stores.table).withLock(ws, () => meter.run(300)),
      ),
    );
    expect(meter.most).toBeGreaterThan(1);
  });

  it("renews a long write's lease, so no one enters after the lease time", async () => {
    const meter = overlapMeter();
    const options = { leaseMs: 300, renewEveryMs: 100 };
    await Promise.all([
      new DynamoWriterLock(stores.table, options).withLock("ws_long", () => meter.run(1200)),
      sleep(50).then(() =>
        new DynamoWriterLock(stores.table, options).withLock("ws_long", () => meter.run(10)),
      ),
    ]);
    expect(meter.most).toBe(1);
  });

  it("takes over a crashed writer's lease once it expires, and not before", async () => {
    const expiresAt = Date.now() + 600;
    await stores.table.put({
      pk: wsKey("ws_crashed"),
      sk: LEASE_SK,
      owner: "a crashed process",
      expires_at: expiresAt,
    });
    await expect(
      new DynamoWriterLock(stores.table, { waitMs: 200 }).withLock("ws_crashed", async () => 1),
    ).rejects.toBeInstanceOf(WriterLockTimeout);
    expect(await new DynamoWriterLock(stores.table).withLock("ws_crashed", async () => 2)).toBe(2);
    // Taken only once the crashed writer's lease had expired, however long the first wait took.
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
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
    await expect(
      lock.withLock("ws_lost", async () => {
        // Another process took the lease (ours looked expired to it).
        await stores.table.put({
          pk: wsKey("ws_lost"),
          sk: LEASE_SK,
          owner: "the next writer",
          expires_at: Date.now() + 60_000,
        });
        await sleep(250);
      }),
    ).rejects.toBeInstanceOf(WriterLockLost);
    expect(await stores.table.get(wsKey("ws_lost"), LEASE_SK)).toMatchObject({
      owner: "the next writer",
    });
  });
});
