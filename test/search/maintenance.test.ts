import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engine } from "../../lib/search/engine.js";
import { doc, indexOn, type SearchStores, seeded, startSearchStores } from "./support.js";

const ids = (hits: Array<{ id: string }>) => hits.map((hit) => hit.id);

let stores: SearchStores;
beforeAll(async () => {
  stores = await startSearchStores();
});
afterAll(() => stores.close());

/** The engine's own view of a workspace's table, opened beside the index under test. */
async function inspect(workspaceId: string, table: string) {
  const { lance } = await engine();
  const db = await lance.connect(join(stores.disk.uri, workspaceId), {
    readConsistencyInterval: 0,
  });
  return db.openTable(table);
}

describe("keeping a workspace's indexes current", () => {
  it("keeps recent writes in a small table indexed at once, and folds them in past a threshold", async () => {
    const ws = "ws_tail";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 25 });
    const batch = (n: number, word = "tail", length = 10) =>
      doc(
        `kb_${n}`,
        Array.from({ length }, (_, i) => `${word} ${n} ${i}`),
      );
    await index.replaceSource(ws, batch(0));
    await index.replaceSource(ws, batch(1));
    const [chunks, recent] = await Promise.all([
      inspect(ws, "chunks"),
      inspect(ws, "recent_chunks"),
    ]);
    expect(await chunks.countRows()).toBe(0);
    expect(await recent.indexStats("terms_idx")).toMatchObject({
      numIndexedRows: 20,
      numUnindexedRows: 0,
    });
    expect(await index.search(ws, { text: "tail", limit: 100 })).toHaveLength(20);
    // The third write brings the recent table to 30 rows, past 25: they move to the chunks table.
    await index.replaceSource(ws, batch(2));
    expect(await chunks.indexStats("terms_idx")).toMatchObject({
      numIndexedRows: 30,
      numUnindexedRows: 0,
    });
    expect(await chunks.indexStats("heading_terms_idx")).toMatchObject({ numUnindexedRows: 0 });
    expect(await recent.countRows()).toBe(0);
    expect(await index.search(ws, { text: "tail", limit: 100 })).toHaveLength(30);
    // A folded source written again leaves the chunks table (a delete, no rewrite) for the recent one.
    await index.replaceSource(ws, batch(0, "renewed", 4));
    expect(await chunks.countRows()).toBe(20);
    expect(await recent.countRows()).toBe(4);
    expect(await index.search(ws, { text: "tail", limit: 100 })).toHaveLength(20);
    expect(await index.search(ws, { text: "renewed", limit: 100 })).toHaveLength(4);
  });

  it("finds and ranks every row written after the table was made, before and after a fold", async () => {
    // Only rows in an index may answer: the engine drops and misranks the others
    // (docs/decisions/0001-search-engine.md), so every write must be found and ranked.
    const ws = "ws_exact";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 4 });
    const expected = ["kb_repeats#0", "kb_first#0", "kb_once#0"];
    await index.replaceSource(ws, doc("kb_first", ["plans hello pricing world"]));
    await index.replaceSource(ws, doc("kb_repeats", ["pricing pricing more pricing our pricing"]));
    await index.replaceSource(ws, doc("kb_once", ["a later note on pricing and plans"]));
    expect(ids(await index.search(ws, { text: "pricing", limit: 5 }))).toEqual(expected);
    // Past the threshold, a fourth write folds all four sources into the chunks table.
    await index.replaceSource(ws, doc("kb_other", ["nothing relevant here"]));
    expect(await (await inspect(ws, "recent_chunks")).countRows()).toBe(0);
    expect(ids(await index.search(ws, { text: "pricing", limit: 5 }))).toEqual(expected);
  });

  it("counts a row once while a fold has copied it and not yet deleted it", async () => {
    const ws = "ws_mid_fold";
    const index = indexOn(stores, stores.disk);
    await index.replaceSource(ws, doc("kb_a", ["halfway one", "halfway two"]));
    // The fold's first two steps, as a writer that stopped before its third would leave them.
    const [chunks, recent] = await Promise.all([
      inspect(ws, "chunks"),
      inspect(ws, "recent_chunks"),
    ]);
    await chunks.add(await recent.query().toArrow());
    await chunks.optimize();
    expect(ids(await index.search(ws, { text: "halfway", limit: 10 })).sort()).toEqual([
      "kb_a#0",
      "kb_a#1",
    ]);
  });

  it("keeps the recent table compact, and compacts a vector table grown by many small writes", async () => {
    const ws = "ws_small_writes";
    const index = indexOn(stores, stores.disk, { optimizeAfterFragments: 4 });
    for (let n = 0; n < 6; n++) {
      await index.replaceSource(ws, {
        ...doc(`kb_${n}`, [`small ${n}`]),
        vectors: { space: "small4", vectors: [[n, 1, 0, 0]] },
      });
    }
    const [recent, vectors] = await Promise.all([
      inspect(ws, "recent_chunks"),
      inspect(ws, "vectors_small4"),
    ]);
    expect((await recent.stats()).fragmentStats.numFragments).toBeLessThan(3);
    expect((await vectors.stats()).fragmentStats.numFragments).toBeLessThan(4);
    expect(await index.search(ws, { text: "small", limit: 10 })).toHaveLength(6);
  });

  it("gives a space an approximate vector index once it is large, and still finds by it", async () => {
    const ws = "ws_ann";
    const index = indexOn(stores, stores.disk, { vectorIndexAfterRows: 400 });
    const random = seeded(7);
    const vectorOf = () => Float32Array.from({ length: 16 }, () => random() * 2 - 1);
    const documents = Array.from({ length: 5 }, (_, s) => {
      const vectors = Array.from({ length: 100 }, vectorOf);
      return {
        ...doc(
          `kb_${s}`,
          vectors.map((_, i) => `vector chunk ${s} ${i}`),
        ),
        vectors: { space: "ann16", vectors },
      };
    });
    for (const document of documents.slice(0, 3)) await index.replaceSource(ws, document);
    const vectors = await inspect(ws, "vectors_ann16");
    expect(await vectors.indexStats("vector_idx")).toBeUndefined();
    for (const document of documents.slice(3)) await index.replaceSource(ws, document);
    expect(await vectors.indexStats("vector_idx")).toMatchObject({ indexType: "IVF_RQ" });
    const target = documents[4]?.vectors.vectors[42] as Float32Array;
    const hits = await index.search(ws, { text: "", vector: target, space: "ann16", limit: 1 });
    expect(hits.map((hit) => hit.id)).toEqual(["kb_4#42"]);
  });

  it("writes a bulk load into the chunks table, searchable after one optimize at its end", async () => {
    const ws = "ws_bulk";
    const index = indexOn(stores, stores.disk, {
      foldAfterRows: 10,
      optimizeAfterFragments: 2,
      vectorIndexAfterRows: 300,
    });
    const random = seeded(11);
    for (let s = 0; s < 4; s++) {
      const vectors = Array.from({ length: 100 }, () =>
        Float32Array.from({ length: 16 }, () => random() * 2 - 1),
      );
      const document = {
        ...doc(
          `kb_${s}`,
          vectors.map((_, i) => `bulk ${s} ${i}`),
        ),
        vectors: { space: "bulk16", vectors },
      };
      await index.replaceSources(ws, [document], { maintain: false });
    }
    const chunks = await inspect(ws, "chunks");
    const vectors = await inspect(ws, "vectors_bulk16");
    expect(await chunks.indexStats("terms_idx")).toMatchObject({ numUnindexedRows: 400 });
    expect(await vectors.indexStats("vector_idx")).toBeUndefined();
    // Only rows an index holds answer (the engine misranks the others), so none do yet.
    expect(await index.search(ws, { text: "bulk", limit: 1000 })).toEqual([]);
    await index.optimize(ws);
    expect(await chunks.indexStats("terms_idx")).toMatchObject({ numUnindexedRows: 0 });
    expect(await index.search(ws, { text: "bulk", limit: 1000 })).toHaveLength(400);
    expect((await chunks.stats()).fragmentStats.numFragments).toBeLessThan(4);
    expect(await vectors.indexStats("vector_idx")).toMatchObject({ numUnindexedRows: 0 });
  });
});
