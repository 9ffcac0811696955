import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { inTurns, runDueRefreshes } from "../../lib/knowledge/refresh/run.js";
import { dueSlot, refreshPartition } from "../../lib/knowledge/sources/schedule.js";
import {
  newSourceItem,
  type ReindexOptions,
  type SourceItem,
  Sources,
} from "../../lib/knowledge/sources/sources.js";
import { wsKey } from "../../lib/store/table.js";
import { roomyQuotas, startAws, type TestAws } from "../support/aws.js";

/**
 * The hourly refresh is no serial loop (issue 26): the items due in an hour are refreshed a
 * bounded number at a time, in turns across workspaces, and every one of them is refreshed.
 * Counted, not timed: how many refreshes were in flight at once, and which came first.
 */

let aws: TestAws;
beforeAll(async () => {
  aws = await startAws();
});
afterAll(() => aws.close());

const AT = new Date(Date.UTC(2026, 10, 23, 7, 30));
const LANES = 4;

/** Sources whose reindex waits until `lanes` are in flight at once, counting them. */
class CountingSources extends Sources {
  inFlight = 0;
  mostInFlight = 0;
  readonly order: string[] = [];
  private opened = false;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly lanes: number) {
    super({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("index") });
    // A run that never has `lanes` in flight fails on the count below instead of hanging.
    setTimeout(() => this.open(), 3_000).unref();
  }

  override async reindex(workspaceId: string, id: string, options?: ReindexOptions) {
    this.order.push(workspaceId);
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    if (this.inFlight >= this.lanes) this.open();
    if (!this.opened) await new Promise<void>((resolve) => this.waiters.push(resolve));
    try {
      return await super.reindex(workspaceId, id, options);
    } finally {
      this.inFlight--;
    }
  }

  private open() {
    this.opened = true;
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}

/** An indexed URL source of `workspaceId`, due for its daily refresh at `AT`. */
async function dueSource(workspaceId: string, n: number): Promise<SourceItem> {
  const item: SourceItem = {
    ...newSourceItem(workspaceId, {
      type: "url",
      name: `Page ${n}`,
      source_url_or_path: `https://site.example/${workspaceId}/${n}`,
    }),
    status: "indexed",
    refresh: "daily",
    gsi2pk: refreshPartition("daily", dueSlot("daily", AT)),
    gsi2sk: `${workspaceId}#${n}`,
  };
  await aws.table.put(item);
  return item;
}

describe("the hourly refresh", () => {
  it("refreshes every item due, a bounded number at a time, in turns across workspaces", async () => {
    // One tenant with 30 items due, eleven with 3 each.
    const big = "ws_fanout_big";
    const small = Array.from({ length: 11 }, (_, i) => `ws_fanout_${String(i).padStart(2, "0")}`);
    const due = [
      ...(await Promise.all(Array.from({ length: 30 }, (_, n) => dueSource(big, n)))),
      ...(await Promise.all(small.flatMap((ws) => [0, 1, 2].map((n) => dueSource(ws, n))))),
    ];
    const sources = new CountingSources(LANES);
    const run = await runDueRefreshes(
      {
        table: aws.table,
        sources,
        crawls: new Crawls({ table: aws.table, queue: aws.queue("crawl"), watchSeconds: 1 }),
        quotas: roomyQuotas(aws.table),
      },
      AT,
      LANES,
    );

    expect(run).toEqual({ sources: due.length, crawls: 0, skipped: 0 });
    for (const item of due) {
      const now = await aws.table.get<SourceItem>(wsKey(item.workspaceId), item.sk);
      expect(now).toMatchObject({ revision: 2, status: "indexing" });
    }
    // Never more than its lanes at once, and all of them used.
    expect(sources.mostInFlight).toBe(LANES);
    // Every workspace had its first item refreshed before any workspace its second.
    expect(new Set(sources.order.slice(0, 12)).size).toBe(12);
  });

  it("starts each hour's turns at another workspace", () => {
    const items = ["a", "a", "b", "c", "c"].map((workspaceId) => ({ workspaceId }));
    const firsts = [0, 1, 2].map((hour) => inTurns(items, hour)[0]?.workspaceId);
    expect(new Set(firsts)).toEqual(new Set(["a", "b", "c"]));
    expect(inTurns(items, 0).map((i) => i.workspaceId)).toEqual(["a", "b", "c", "a", "c"]);
  });
});
