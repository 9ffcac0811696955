import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import type { IndexRetriever, SearchResult } from "../../lib/knowledge/retrieval/retrieval.js";
import type { Sources } from "../../lib/knowledge/sources/sources.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { vocabulary } from "./attacks.js";

/**
 * Found by the timed fuzz, which it killed: the local runtime exited on an unhandled rejection
 * from MiniSearch's automatic vacuuming (`TypeError: Cannot read properties of undefined (reading
 * 'keys')` in `performVacuuming`), when a search added chunks with new words while the index was
 * cleaning up after a disabled or deleted source. Search now runs on the persisted index, where
 * the clean-up is the removal of a deleted source's rows and the compaction of the table; the
 * scenario stays: sources disabled, deleted and removed, the table compacted, while sources with
 * new words are indexed and searched for, all at once. Nothing may crash, and every search must
 * answer what the sources' state says.
 */

const WS = "ws_01JD0000000000000000000077";
let aws: TestAws;
let sources: Sources;
let indexer: Indexer;
let retriever: IndexRetriever;
const rejections: unknown[] = [];
const record = (reason: unknown) => rejections.push(reason);
const once = { receiveCount: 1, maxReceiveCount: 3 };

/** The last index message queued for a source (others may be queued meanwhile). */
function messageFor(sourceId: string): IndexMessage {
  const message = aws.queues
    .pending("index")
    .map((body) => JSON.parse(body) as IndexMessage)
    .findLast((queued) => queued.sourceId === sourceId);
  if (!message) throw new Error(`No index message for ${sourceId}`);
  return message;
}

/** Creates a text source and indexes it at once; its id. */
async function indexed(text: string, name: string): Promise<string> {
  const { id } = await sources.createText(WS, text, name);
  expect(await indexer.handle(messageFor(id), once)).toBe("indexed");
  return id;
}

/** Deletes a source and runs its removal message through the indexer, as the worker would. */
async function deleted(sourceId: string): Promise<void> {
  await sources.delete(WS, sourceId);
  expect(await indexer.handle(messageFor(sourceId), once)).toBe("skipped");
}

/** The names of the sources found, each once. */
const names = (results: SearchResult[]) => [...new Set(results.map((r) => r.name))].sort();

beforeAll(async () => {
  process.on("unhandledRejection", record);
  aws = await startAws();
  sources = sourcesOn(aws);
  indexer = indexerOn(aws, { text: textLoader(aws.blobs) }, { size: 300, overlap: 0 });
  retriever = retrieverOn(aws);
}, 60_000);
afterAll(async () => {
  process.off("unhandledRejection", record);
  await aws.close();
});

describe("searching while sources are removed and the index is cleaned up", () => {
  it("keeps the process alive, and every search right, when searches for new words run meanwhile", async () => {
    // Tens of thousands of distinct words over a couple of thousand chunks, so the removals and
    // the compaction have real work to do while the searches run.
    const words = vocabulary(600_000);
    const disabled = await indexed(words, "Disabled");
    const gone = await indexed(`${words} quetzal`, "Deleted");
    await indexed("A second source that stays.", "Stays");
    expect(names(await retriever.search(WS, "zorbaaa", 5))).toEqual(["Deleted", "Disabled"]);
    expect(names(await retriever.search(WS, "quetzal", 5))).toEqual(["Deleted"]);

    const added = ["glossary", "vexes", "quaint", "zoologists", "marimba", "tundra"];
    const found: SearchResult[][] = [];
    let churning = true;
    /** Searches, until the churn ends, for what is never touched and for words being added. */
    async function searching(): Promise<void> {
      for (let i = 0; churning; i++) {
        const stays = await retriever.search(WS, "stays", 5);
        expect(names(stays)).toEqual(["Stays"]);
        found.push(await retriever.search(WS, added[i % added.length] as string, 5));
      }
    }
    const churn = async () => {
      try {
        await Promise.all([
          sources.setEnabled(WS, disabled, false),
          deleted(gone),
          ...added.map((word, i) => indexed(`The ${word} is new here.`, `Added ${i}`)),
        ]);
        // The index's own clean-up: compaction, removed rows dropped, indexes rebuilt.
        await aws.search.optimize(WS);
      } finally {
        churning = false;
      }
    };
    await Promise.all([churn(), searching(), searching()]);

    // While the sources were being added, a search for a new word found its source or nothing.
    expect(found.length).toBeGreaterThan(0);
    for (const results of found) {
      expect(names(results).length).toBeLessThanOrEqual(1);
      expect(results.every((r) => r.name.startsWith("Added "))).toBe(true);
    }
    // Afterwards: the disabled and deleted sources are gone from search, every new one is found.
    expect(await retriever.search(WS, "zorbaaa", 5)).toEqual([]);
    expect(await retriever.search(WS, "quetzal", 5)).toEqual([]);
    for (const [i, word] of added.entries()) {
      expect(names(await retriever.search(WS, word, 5))).toEqual([`Added ${i}`]);
    }
    // The deleted source's rows are out of the index; the disabled one's are kept for its return.
    const rows = await aws.search.search(WS, { text: "zorbaaa", limit: 10 });
    expect([...new Set(rows.map((hit) => hit.source_id))]).toEqual([disabled]);
    await sources.setEnabled(WS, disabled, true);
    expect(names(await retriever.search(WS, "zorbaaa", 5))).toEqual(["Disabled"]);

    expect(rejections.map((r) => String(r))).toEqual([]);
  }, 120_000);
});
