import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engine } from "../../lib/search/engine.js";
import { doc, indexOn, type SearchStores, seeded, startSearchStores } from "./support.js";

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
  it("searches rows written after the index was built, and folds them in past a threshold", async () => {
    const ws = "ws_tail";
    const index = indexOn(stores, stores.disk, { optimizeAfterRows: 25 });
    const batch = (n: number) =>
      doc(
        `kb_${n}`,
        Array.from({ length: 10 }, (_, i) => `tail ${n} ${i}`),
      );
    // The first write creates the table and builds its indexes over its rows.
    await index.replaceSource(ws, batch(0));
    const chunks = await inspect(ws, "chunks");
    expect(await chunks.indexStats("terms_idx")).toMatchObject({ numUnindexedRows: 0 });
    await index.replaceSource(ws, batch(1));
    await index.replaceSource(ws, batch(2));
    expect(await chunks.indexStats("terms_idx")).toMatchObject({ numUnindexedRows: 20 });
    // Not yet folded in, and found all the same.
    const hits = await index.search(ws, { text: "tail", limit: 100 });
    expect(hits).toHaveLength(30);
    await index.replaceSource(ws, batch(3));
    expect(await chunks.indexStats("terms_idx")).toMatchObject({
      numIndexedRows: 40,
      numUnindexedRows: 0,
    });
    expect(await chunks.indexStats("heading_terms_idx")).toMatchObject({ numUnindexedRows: 0 });
    expect(await index.search(ws, { text: "tail", limit: 100 })).toHaveLength(40);
  });

  it("compacts a table grown by many small writes", async () => {
    const ws = "ws_small_writes";
    const index = indexOn(stores, stores.disk, { optimizeAfterFragments: 4 });
    for (let n = 0; n < 6; n++) await index.replaceSource(ws, doc(`kb_${n}`, [`small ${n}`]));
    const stats = await (await inspect(ws, "chunks")).stats();
    expect(stats.fragmentStats.numFragments).toBeLessThan(4);
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

  it("defers maintenance through a bulk load to one optimize at its end", async () => {
    const ws = "ws_bulk";
    const index = indexOn(stores, stores.disk, {
      optimizeAfterRows: 10,
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
    expect(await chunks.indexStats("terms_idx")).toMatchObject({ numUnindexedRows: 300 });
    expect(await vectors.indexStats("vector_idx")).toBeUndefined();
    expect(await index.search(ws, { text: "bulk", limit: 1000 })).toHaveLength(400);
    await index.optimize(ws);
    expect(await chunks.indexStats("terms_idx")).toMatchObject({ numUnindexedRows: 0 });
    expect((await chunks.stats()).fragmentStats.numFragments).toBeLessThan(4);
    expect(await vectors.indexStats("vector_idx")).toMatchObject({ numUnindexedRows: 0 });
  });
});
