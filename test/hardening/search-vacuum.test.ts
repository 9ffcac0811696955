import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textLoader } from "../../lib/knowledge/indexer.js";
import { LexicalRetriever } from "../../lib/knowledge/retrieval.js";
import type { IndexMessage } from "../../lib/knowledge/sources.js";
import { indexerOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { vocabulary } from "./attacks.js";

/**
 * Found by the timed fuzz, which it killed: the local runtime exited on an unhandled rejection
 * from MiniSearch's automatic vacuuming (`TypeError: Cannot read properties of undefined (reading
 * 'keys')` in `performVacuuming`). Vacuuming starts by itself once enough indexed chunks are
 * discarded (a source disabled, deleted or reindexed, seen by the next search), then walks the
 * index's tree in batches with pauses between them; a search meanwhile that adds chunks with new
 * words splits branches of the tree the walk has yet to reach, the walk throws, and nothing
 * catches it. On AWS it takes down the knowledge API's instance with the requests it is serving.
 */

const WS = "ws_01JD0000000000000000000077";
let aws: TestAws;
let retriever: LexicalRetriever;
const rejections: unknown[] = [];
const record = (reason: unknown) => rejections.push(reason);

/** Creates a text source and indexes it at once; its id. */
async function indexed(text: string, name: string): Promise<string> {
  const source = await sourcesOn(aws).createText(WS, text, name);
  const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
  const indexer = indexerOn(aws, { text: textLoader(aws.blobs) }, { size: 300, overlap: 0 });
  expect(await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 })).toBe("indexed");
  return source.id;
}

beforeAll(async () => {
  process.on("unhandledRejection", record);
  aws = await startAws();
  retriever = new LexicalRetriever({ table: aws.table, blobs: aws.blobs });
}, 60_000);
afterAll(async () => {
  process.off("unhandledRejection", record);
  await aws.close();
});

describe("searching while the index cleans up after a removed source", () => {
  it("keeps the process alive when a search adds new words during the clean-up", async () => {
    // Tens of thousands of distinct words, so the clean-up walk takes many batches.
    const words = vocabulary(600_000);
    const removed = await indexed(words, "Removed");
    await indexed("A second source that stays.", "Stays");
    expect(await retriever.search(WS, "zorbaaa", 5)).not.toEqual([]);

    await sourcesOn(aws).setEnabled(WS, removed, false);
    // This search discards the disabled source's chunks: the clean-up starts.
    await retriever.search(WS, "stays", 5);
    // A search meanwhile adds a source whose words branch off inside the vocabulary's stems
    // (`glossary` inside `glar…`): the index's tree is rebuilt where the walk has yet to go.
    await indexed("The glossary vexes quaint zoologists.", "Added during the clean-up");
    expect(await retriever.search(WS, "glossary", 5)).not.toEqual([]);

    // Long enough for the clean-up to finish, or to throw.
    for (let i = 0; i < 10 && rejections.length === 0; i++) await sleep(300);
    expect(rejections.map((r) => String(r))).toEqual([]);
  }, 60_000);
});
