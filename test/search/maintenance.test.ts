import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engine } from "../../lib/search/engine.js";
import { chunkRows, chunkSchema } from "../../lib/search/rows.js";
import {
  doc,
  indexOn,
  openDatabase,
  registryOf,
  type SearchStores,
  seeded,
  startSearchStores,
} from "./support.js";

const ids = (hits: Array<{ id: string }>) => hits.map((hit) => hit.id);

let stores: SearchStores;
beforeAll(async () => {
  stores = await startSearchStores();
});
afterAll(() => stores.close());

/** The live tables of a family, as `level:rows`, segments by level then age, recent last (-1). */
async function shape(ws: string, family = "chunks") {
  const tables = (await registryOf(stores.disk, ws)).filter(
    (table) => table.family === family && table.retired_at === 0,
  );
  return tables
    .sort((a, b) => Number(a.level < 0) - Number(b.level < 0))
    .map((table) => (table.level < 0 ? "recent" : `${table.level}:${table.rows}`));
}

/** A source of `length` chunks whose every chunk holds `word`. */
const batch = (n: number, word = "tier", length = 10) =>
  doc(
    `kb_${n}`,
    Array.from({ length }, (_, i) => `${word} ${n} ${i}`),
  );

describe("the tiers a workspace's rows live in", () => {
  it("indexes a write at once in the recent table, seals it past a threshold, merges four segments into one", async () => {
    const ws = "ws_tiers";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 20, mergeFactor: 4 });
    await index.replaceSource(ws, batch(0));
    expect(await shape(ws)).toEqual(["recent"]);
    const recent = await (await openDatabase(stores.disk, ws)).openTable("recent_chunks");
    expect(await recent.indexStats("terms_idx")).toMatchObject({
      numIndexedRows: 10,
      numUnindexedRows: 0,
    });
    // The second write brings the recent table to 20 rows: they become a level-0 segment.
    await index.replaceSource(ws, batch(1));
    expect(await shape(ws)).toEqual(["0:20", "recent"]);
    expect(await recent.countRows()).toBe(0);
    for (let n = 2; n < 8; n++) await index.replaceSource(ws, batch(n));
    // Four segments of level 0 became one of level 1 (80 rows: 20 × 4 reaches the next level).
    expect(await shape(ws)).toEqual(["1:80", "recent"]);
    expect(await index.search(ws, { text: "tier", limit: 1000 })).toHaveLength(80);
    // A source written again leaves its segment by a deletion, no rewrite: the segment keeps its
    // registered size, the search its count.
    await index.replaceSource(ws, batch(0, "renewed", 4));
    expect(await shape(ws)).toEqual(["1:80", "recent"]);
    expect(await index.search(ws, { text: "tier", limit: 1000 })).toHaveLength(70);
    expect(await index.search(ws, { text: "renewed", limit: 1000 })).toHaveLength(4);
  });

  it("finds and ranks every row at every step of seals and merges", async () => {
    // Only rows in an index may answer: the engine drops and misranks the others
    // (docs/decisions/0001-search-engine.md), so every write must be found and ranked, wherever
    // its rows are. Each source holds "pricing" a different number of times: the ranking is known.
    const ws = "ws_every_step";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 3, mergeFactor: 2 });
    const written: string[] = [];
    for (let n = 1; n <= 12; n++) {
      const words = [...Array.from({ length: n }, () => "pricing"), `filler${n}`];
      await index.replaceSource(ws, doc(`kb_${String(n).padStart(2, "0")}`, [words.join(" ")]));
      written.unshift(`kb_${String(n).padStart(2, "0")}#0`);
      expect(ids(await index.search(ws, { text: "pricing", limit: 100 }))).toEqual(written);
    }
    // Four seals of 3 rows, merged in pairs into level 1 (6 rows); a write merges once at most,
    // so the pair of level 1 waits for the next write.
    expect(await shape(ws)).toEqual(["1:6", "1:6", "recent"]);
    await index.replaceSource(ws, doc("kb_13", ["unrelated"]));
    expect(await shape(ws)).toEqual(["2:12", "recent"]);
    expect(ids(await index.search(ws, { text: "pricing", limit: 100 }))).toEqual(written);
  });

  it("counts a row once while a seal has copied it and not yet emptied the recent table", async () => {
    const ws = "ws_mid_seal";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 1000 });
    await index.replaceSource(ws, doc("kb_a", ["halfway one", "halfway two"]));
    // A writer that sealed the recent table's rows and stopped before emptying it leaves them in
    // both a registered segment and the recent table: made here with a second index whose
    // threshold the next write passes, on a store whose recent table is then refilled.
    const sealer = indexOn(stores, stores.disk, { foldAfterRows: 2 });
    await sealer.replaceSource(ws, doc("kb_b", ["other words"]));
    const db = await openDatabase(stores.disk, ws);
    const [segment] = (await registryOf(stores.disk, ws)).filter((t) => t.level === 0);
    await (await db.openTable("recent_chunks")).add(
      await (await db.openTable(segment?.name ?? "")).query().toArrow(),
    );
    expect(ids(await index.search(ws, { text: "halfway", limit: 10 })).sort()).toEqual([
      "kb_a#0",
      "kb_a#1",
    ]);
  });

  it("drops what a merge replaced after the grace, and keeps a reader holding it answering", async () => {
    const ws = "ws_grace";
    const options = { foldAfterRows: 10, mergeFactor: 2, versionGraceSeconds: 0 };
    const writer = indexOn(stores, stores.disk, options);
    // A reader that never looks for newer versions by itself: it holds what it opened first.
    const reader = indexOn(stores, stores.disk, { ...options, readConsistencySeconds: 3600 });
    await writer.replaceSource(ws, batch(0));
    await writer.replaceSource(ws, batch(1));
    expect(await reader.search(ws, { text: "tier", limit: 100 })).toHaveLength(20);
    const opened = (await registryOf(stores.disk, ws)).filter((t) => t.level >= 0);
    // Two more seals make two level-0 segments, merged; with no grace the next write drops them.
    for (let n = 2; n < 6; n++) await writer.replaceSource(ws, batch(n));
    for (const table of opened) {
      expect(existsSync(join(stores.disk.uri, ws, `${table.name}.lance`))).toBe(false);
    }
    expect(await registryOf(stores.disk, ws)).not.toContainEqual(
      expect.objectContaining({ name: opened[0]?.name }),
    );
    // The reader still held the dropped segment and the recent table's pruned version.
    expect(await reader.search(ws, { text: "tier", limit: 100 })).toHaveLength(60);
  });

  it("keeps the recent table's versions to those within the grace", async () => {
    const ws = "ws_versions";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 1000, versionGraceSeconds: 0 });
    for (let n = 0; n < 8; n++) await index.replaceSource(ws, batch(n, "versions", 2));
    const recent = await (await openDatabase(stores.disk, ws)).openTable("recent_chunks");
    // Each write makes a few versions (its merge, its optimize); older ones are gone at once.
    expect((await recent.listVersions()).length).toBeLessThanOrEqual(3);
    expect(await index.search(ws, { text: "versions", limit: 100 })).toHaveLength(16);
  });

  it("writes a large source as a segment of its own, and its older rows leave the other tables", async () => {
    const ws = "ws_direct";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 40, segmentWriteRows: 20 });
    await index.replaceSource(ws, batch(0, "small", 10));
    await index.replaceSource(ws, batch(1, "small", 10));
    expect(await shape(ws)).toEqual(["recent"]);
    // 30 rows: a level-0 segment at once, the recent table left as it was.
    await index.replaceSource(ws, batch(2, "large", 30));
    expect(await shape(ws)).toEqual(["0:30", "recent"]);
    // Source 1 written again, large: its small rows leave the recent table.
    await index.replaceSource(ws, batch(1, "again", 25));
    expect(await shape(ws)).toEqual(["0:30", "0:25", "recent"]);
    // And source 2 again: its rows leave the first segment by a deletion.
    await index.replaceSource(ws, batch(2, "third", 20));
    expect(await shape(ws)).toEqual(["0:30", "0:25", "0:20", "recent"]);
    const found = async (text: string) => ids(await index.search(ws, { text, limit: 100 })).sort();
    expect(await found("small")).toEqual(
      batch(0, "small", 10)
        .chunks.map((_, i) => `kb_0#${i}`)
        .sort(),
    );
    expect(await found("again")).toHaveLength(25);
    expect(await found("third")).toHaveLength(20);
    expect(await found("large")).toEqual([]);
    const hits = await index.search(ws, { text: "again 1 24", limit: 1 });
    expect(hits[0]).toMatchObject({ id: "kb_1#24", text: "again 1 24" });
  });

  it("rebuilds the recent table's indexes at each write, and prunes its versions once a grace", async () => {
    const ws = "ws_reindex";
    const index = indexOn(stores, stores.disk, { foldAfterRows: 1000, versionGraceSeconds: 3600 });
    for (let n = 0; n < 8; n++) {
      await index.replaceSource(ws, batch(n, "rebuilt", 2));
      // Searched by the index alone: a row the rebuild missed would not be found.
      expect(await index.search(ws, { text: `rebuilt ${n}`, limit: 100 })).toHaveLength(
        2 * (n + 1),
      );
    }
    const recent = await (await openDatabase(stores.disk, ws)).openTable("recent_chunks");
    // The first write optimized; none since (within the grace) read and pruned the versions.
    expect((await recent.listVersions()).length).toBeGreaterThan(8);
  });

  it("gives a vector segment an approximate index once it is large, and still finds by it", async () => {
    const ws = "ws_ann";
    const index = indexOn(stores, stores.disk, {
      vectorIndexAfterRows: 400,
      foldAfterRows: 200,
      mergeFactor: 3,
    });
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
    for (const document of documents) await index.replaceSource(ws, document);
    // Two seals of 200 vectors each, scanned exactly, and the recent 100.
    expect(await shape(ws, "vectors_ann16")).toEqual(["0:200", "0:200", "recent"]);
    await index.optimize(ws);
    // The optimize sealed the rest and merged: one segment of 500, with its approximate index.
    const [segment] = await registryOf(stores.disk, ws).then((tables) =>
      tables.filter((t) => t.family === "vectors_ann16" && t.level >= 0 && t.retired_at === 0),
    );
    expect(segment?.rows).toBe(500);
    const table = await (await openDatabase(stores.disk, ws)).openTable(segment?.name ?? "");
    expect(await table.indexStats("vector_idx")).toMatchObject({ indexType: "IVF_RQ" });
    const target = documents[4]?.vectors.vectors[42] as Float32Array;
    const hits = await index.search(ws, { text: "", vector: target, space: "ann16", limit: 1 });
    expect(hits.map((hit) => hit.id)).toEqual(["kb_4#42"]);
  });

  it("writes a bulk load unindexed, searchable after one optimize at its end, in segments of at most maxSegmentRows", async () => {
    const ws = "ws_bulk";
    const index = indexOn(stores, stores.disk, {
      foldAfterRows: 10,
      maxSegmentRows: 150,
      copyBatchRows: 40,
    });
    for (let s = 0; s < 4; s++) {
      await index.replaceSources(ws, [batch(s, "bulk", 100)], { maintain: false });
    }
    // Only rows an index holds answer (the engine misranks the others), so none do yet.
    expect(await index.search(ws, { text: "bulk", limit: 1000 })).toEqual([]);
    await index.optimize(ws);
    expect(await index.search(ws, { text: "bulk", limit: 1000 })).toHaveLength(400);
    const sizes = (await registryOf(stores.disk, ws))
      .filter((t) => t.level >= 0 && t.retired_at === 0)
      .map((t) => t.rows);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(400);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(160);
  });
});

describe("an index written before the registry", () => {
  it("answers at once from its old tables, and its first write records them as segments", async () => {
    const ws = "ws_legacy";
    const eng = await engine();
    const db = await openDatabase(stores.disk, ws);
    // The layout of the previous version: the bulk in `chunks`, under its full-text indexes.
    const chunks = await db.createTable(
      "chunks",
      chunkRows(batch(0, "legacy", 5)).map((row) => ({ ...row })),
      { schema: chunkSchema(eng) },
    );
    for (const column of ["terms", "heading_terms"]) {
      await chunks.createIndex(column, {
        config: eng.lance.Index.fts({
          baseTokenizer: "whitespace",
          lowercase: false,
          stem: false,
          removeStopWords: false,
          asciiFolding: false,
          withPosition: false,
        }),
        name: `${column}_idx`,
      });
    }
    const index = indexOn(stores, stores.disk);
    expect(await index.search(ws, { text: "legacy", limit: 100 })).toHaveLength(5);
    await index.replaceSource(ws, batch(1, "legacy", 3));
    expect(await shape(ws)).toEqual(["99:5", "recent"]);
    expect(await index.search(ws, { text: "legacy", limit: 100 })).toHaveLength(8);
    // A legacy source written again leaves the old table by a deletion, as from any segment.
    await index.replaceSource(ws, batch(0, "renewed", 2));
    expect(await index.search(ws, { text: "legacy", limit: 100 })).toHaveLength(3);
  });
});
