import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Indexer, textLoader } from "../../lib/knowledge/indexer.js";
import { type IndexMessage, Sources } from "../../lib/knowledge/sources.js";
import { failStalledSources } from "../../lib/knowledge/watchdog.js";
import { startAws, type TestAws } from "../support/aws.js";

const WS = "ws_01JD0000000000000000000W01";
const HOUR = 3_600_000;
let aws: TestAws;
let sources: Sources;

beforeAll(async () => {
  aws = await startAws();
  sources = new Sources({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("index") });
});
afterAll(() => aws.close());

describe("the watchdog", () => {
  it("fails sources stuck in indexing past the stall time, and only those", async () => {
    const stuck = await sources.createText(WS, "Its message was lost.", "stuck");
    const done = await sources.createText(WS, "This one finished.", "done");
    const indexer = new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      chunking: { size: 500, overlap: 0 },
      loaders: { text: textLoader(aws.blobs) },
    });
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 });

    expect(await failStalledSources(aws.table, HOUR)).toBe(0);
    expect(await failStalledSources(aws.table, HOUR, Date.now() + 2 * HOUR)).toBe(1);
    expect(await sources.get(WS, stuck.id)).toMatchObject({
      status: "failed",
      error_code: "stalled",
      last_error: "Indexing made no progress for 60 minutes; reindex to try again",
    });
    expect((await sources.get(WS, done.id)).status).toBe("indexed");
    expect(await failStalledSources(aws.table, HOUR, Date.now() + 2 * HOUR)).toBe(0);
  });

  it("leaves a source alone once it is reindexed", async () => {
    const source = await sources.createText(WS, "Reindexed before the watchdog came.", "again");
    await sources.reindex(WS, source.id);
    await failStalledSources(aws.table, HOUR, Date.now() + 2 * HOUR);
    // Both revisions started before the cutoff, so the current one is failed, once.
    const after = await sources.get(WS, source.id);
    expect(after).toMatchObject({ status: "failed", revision: 2 });
    await sources.reindex(WS, source.id);
    expect(await failStalledSources(aws.table, HOUR)).toBe(0);
    expect((await sources.get(WS, source.id)).status).toBe("indexing");
  });
});
