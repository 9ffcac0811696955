import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { type SourceItem, Sources } from "../../lib/knowledge/sources/sources.js";
import { failStalledSources } from "../../lib/knowledge/sources/watchdog.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { startAws, type TestAws } from "../support/aws.js";

const WS = "ws_01JD0000000000000000000W01";
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Queued sources fail after an hour; a last attempt without a result, five minutes after it began. */
const LIMITS = { queuedMs: HOUR, lastAttemptMs: 5 * MINUTE };
let aws: TestAws;
let sources: Sources;

beforeAll(async () => {
  aws = await startAws();
  sources = new Sources({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("index") });
});
afterAll(() => aws.close());

describe("the watchdog", () => {
  it("fails sources queued past the stall time, and only those", async () => {
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
    expect(await failStalledSources(aws.table, LIMITS, Date.now() + 2 * HOUR)).toBe(1);
    expect(await sources.get(WS, stuck.id)).toMatchObject({
      status: "failed",
      error_code: "stalled",
      last_error: "Indexing made no progress for 60 minutes; reindex to try again",
    });
    expect((await sources.get(WS, done.id)).status).toBe("indexed");
    expect(await failStalledSources(aws.table, LIMITS, Date.now() + 2 * HOUR)).toBe(0);
  });

  it("leaves a source alone once it is reindexed", async () => {
    const source = await sources.createText(WS, "Reindexed before the watchdog came.", "again");
    await sources.reindex(WS, source.id);
    await failStalledSources(aws.table, LIMITS, Date.now() + 2 * HOUR);
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

const messageOf = (source: SourceItem): IndexMessage => ({
  kind: "index",
  workspaceId: source.workspaceId,
  sourceId: source.id,
  revision: source.revision,
});
