import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import {
  LAST_ATTEMPT_PARTITION,
  type SourceItem,
  Sources,
} from "../../lib/knowledge/sources/sources.js";
import { failStalledSources } from "../../lib/knowledge/sources/watchdog.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import type { WebhookEvents } from "../../lib/webhooks/events.js";
import { startAws, type TestAws } from "../support/aws.js";

const WS = "ws_01JD0000000000000000000W01";
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/**
 * A queued source fails once the queue's retention (four days) says its message is gone; a last
 * attempt without a result, five minutes after it began.
 */
const LIMITS = { queuedMs: 4 * DAY, lastAttemptMs: 5 * MINUTE };
let aws: TestAws;
let sources: Sources;

beforeAll(async () => {
  aws = await startAws();
  sources = new Sources({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("index") });
});
afterAll(() => aws.close());

describe("the watchdog", () => {
  it("fails sources queued past the queue's retention, and only those", async () => {
    const stuck = await sources.createText(WS, "Its message was lost.", "stuck");
    const done = await sources.createText(WS, "This one finished.", "done");
    const indexer = new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      search: aws.search,
      chunking: { size: 500, overlap: 0 },
      loaders: { text: textLoader(aws.blobs) },
    });
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 });

    expect(await failStalledSources(aws.table, LIMITS)).toBe(0);
    expect(await failStalledSources(aws.table, LIMITS, Date.now() + 5 * DAY)).toBe(1);
    expect(await sources.get(WS, stuck.id)).toMatchObject({
      status: "failed",
      error_code: "stalled",
      last_error:
        "Indexing never began within 96 hours, as long as the queue keeps a message; reindex to try again",
    });
    expect((await sources.get(WS, done.id)).status).toBe("indexed");
    expect(await failStalledSources(aws.table, LIMITS, Date.now() + 5 * DAY)).toBe(0);
  });

  it("never fails a source for waiting in the queue, however long past the stall bound", async () => {
    const waiting = await sources.createText(WS, "Behind a tenant's bulk import.", "waiting");
    // Far longer than any bound of work that began: 90 minutes, a day, three days of backlog.
    for (const later of [90 * MINUTE, DAY, 3 * DAY]) {
      await failStalledSources(aws.table, LIMITS, Date.now() + later);
      expect((await sources.get(WS, waiting.id)).status).toBe("indexing");
    }
    // Its delivery comes at last, and indexes it.
    const indexer = new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      search: aws.search,
      chunking: { size: 500, overlap: 0 },
      loaders: { text: textLoader(aws.blobs) },
    });
    await indexer.handle(messageOf(waiting), { receiveCount: 1, maxReceiveCount: 3 });
    expect((await sources.get(WS, waiting.id)).status).toBe("indexed");
  });

  it("leaves a source alone once it is reindexed", async () => {
    const source = await sources.createText(WS, "Reindexed before the watchdog came.", "again");
    await sources.reindex(WS, source.id);
    await failStalledSources(aws.table, LIMITS, Date.now() + 5 * DAY);
    // Both revisions started before the cutoff, so the current one is failed, once.
    const after = await sources.get(WS, source.id);
    expect(after).toMatchObject({ status: "failed", revision: 2 });
    await sources.reindex(WS, source.id);
    expect(await failStalledSources(aws.table, LIMITS)).toBe(0);
    expect((await sources.get(WS, source.id)).status).toBe("indexing");
  });

  it("fails a source minutes after its last attempt began without a result, not those that wait", async () => {
    const crashed = await sources.createText(WS, "Its last delivery never finished.", "crashed");
    const retrying = await sources.createText(WS, "A retry follows its first delivery.", "retry");
    const queued = await sources.createText(WS, "Queued behind the others.", "queued");
    // Deliveries that never finish, as a process that dies while indexing leaves them.
    const began: string[] = [];
    const hanging = new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      search: aws.search,
      chunking: { size: 500, overlap: 0 },
      loaders: {
        text: (source) => {
          began.push(source.id);
          return new Promise(() => undefined);
        },
      },
    });
    void hanging.handle(messageOf(crashed), { receiveCount: 3, maxReceiveCount: 3 });
    void hanging.handle(messageOf(retrying), { receiveCount: 1, maxReceiveCount: 3 });
    await vi.waitFor(() => expect(began).toHaveLength(2));

    // The last attempt may still be running a minute later.
    expect(await failStalledSources(aws.table, LIMITS, Date.now() + MINUTE)).toBe(0);
    expect(await failStalledSources(aws.table, LIMITS, Date.now() + 6 * MINUTE)).toBe(1);
    // Hours later the one still waiting for its retry, and the one queued, wait on.
    expect(await failStalledSources(aws.table, LIMITS, Date.now() + 3 * HOUR)).toBe(0);
    expect(await sources.get(WS, crashed.id)).toMatchObject({
      status: "failed",
      error_code: "stalled",
      last_error: expect.stringContaining(
        "The last attempt to index this source ended without a result",
      ),
    });
    for (const waiting of [retrying, queued]) {
      expect((await sources.get(WS, waiting.id)).status).toBe("indexing");
    }
  });
});

describe("the watchdog on the sharded index", () => {
  it("finds stalled sources in every shard and the unsharded partition, failing each once while workers run", async () => {
    const workspaces = Array.from({ length: 24 }, (_, i) => `ws_01JD00000000000000000SH${i}`);
    const shared = new Sources({
      table: aws.table,
      blobs: aws.blobs,
      indexQueue: aws.queue("index-shards"),
    });
    const crashed = await Promise.all(
      workspaces.map((ws) => shared.createText(ws, "Its last delivery dies.", "crashed")),
    );
    const fine = await Promise.all(
      workspaces.map((ws) => shared.createText(ws, "Indexed while the watchdog runs.", "fine")),
    );
    // One source whose last delivery began before the shards: it sits in the unsharded partition.
    const legacy = await shared.createText(WS, "Marked before the shards.", "legacy");
    const began: string[] = [];
    const hanging = new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      search: aws.search,
      chunking: { size: 500, overlap: 0 },
      loaders: {
        text: (source) => {
          began.push(source.id);
          return new Promise(() => undefined);
        },
      },
    });
    for (const source of [...crashed, legacy]) {
      void hanging.handle(messageOf(source), { receiveCount: 3, maxReceiveCount: 3 });
    }
    await vi.waitFor(() => expect(began).toHaveLength(crashed.length + 1));
    await aws.table.update(legacy.pk, legacy.sk, {
      gsi1pk: LAST_ATTEMPT_PARTITION,
      gsi1sk: `${new Date().toISOString()}#${WS}#${legacy.id}`,
    });
    const partitions = new Set(
      await Promise.all(
        crashed.map(async (s) => (await aws.table.get<SourceItem>(s.pk, s.sk))?.gsi1pk),
      ),
    );
    expect(partitions.size).toBeGreaterThan(4);
    expect(partitions.has(LAST_ATTEMPT_PARTITION)).toBe(false);

    const told: string[] = [];
    const events: WebhookEvents = {
      emit: async (_ws, type, data) => {
        if (type === "source.failed") told.push(String(data.id));
      },
    };
    const indexer = new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      search: aws.search,
      chunking: { size: 500, overlap: 0 },
      loaders: { text: textLoader(aws.blobs) },
    });
    const later = Date.now() + 6 * MINUTE;
    const [failed] = await Promise.all([
      Promise.all([1, 2, 3].map(() => failStalledSources(aws.table, LIMITS, later, events))),
      Promise.all(
        fine.map((source) =>
          indexer.handle(messageOf(source), { receiveCount: 1, maxReceiveCount: 3 }),
        ),
      ),
    ]);

    const stalled = [...crashed, legacy].map((source) => source.id).sort();
    expect(failed.reduce((sum, n) => sum + n, 0)).toBe(stalled.length);
    expect(told.sort()).toEqual(stalled);
    for (const source of [...crashed, legacy]) {
      expect((await aws.table.get<SourceItem>(source.pk, source.sk))?.status).toBe("failed");
    }
    for (const source of fine) {
      expect((await aws.table.get<SourceItem>(source.pk, source.sk))?.status).toBe("indexed");
    }
  });
});

const messageOf = (source: SourceItem): IndexMessage => ({
  kind: "index",
  workspaceId: source.workspaceId,
  sourceId: source.id,
  revision: source.revision,
});
