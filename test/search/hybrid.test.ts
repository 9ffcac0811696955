import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  SearchHit,
  SearchIndex,
  SearchLocation,
  SourceDocument,
} from "../../lib/search/index.js";
import {
  doc,
  indexOn,
  openDatabase,
  registryOf,
  type SearchStores,
  seeded,
  startSearchStores,
} from "./support.js";

let stores: SearchStores;
beforeAll(async () => {
  stores = await startSearchStores();
});
afterAll(() => stores.close());

const ids = (hits: SearchHit[]) => hits.map((hit) => hit.id);
const DIMENSIONS = 8;

function randomVector(random: () => number): Float32Array {
  return Float32Array.from({ length: DIMENSIONS }, () => random() * 2 - 1);
}

/** A unit vector along one axis: two chunks on the same axis mean the same thing. */
function axis(i: number): Float32Array {
  const vector = new Float32Array(DIMENSIONS);
  vector[i] = 1;
  return vector;
}

/**
 * Thirty chunks about pricing in decreasing measure (chunk i says "pricing" 30 - i times among
 * filler), each a source of its own, so lexical search has a clear ranking, plus one chunk that
 * answers a pricing question in other words.
 */
const FILLER = "the team reviewed quarterly notes about roadmap items and hiring";
const ranked = Array.from({ length: 30 }, (_, i) =>
  doc(`kb_${String(i).padStart(2, "0")}`, [`${"pricing ".repeat(30 - i)}${FILLER} ${i}`.trim()]),
);
const paraphrase: SourceDocument = {
  source: { id: "kb_para", type: "file", crawlId: null },
  chunks: [
    {
      chunkIndex: 3,
      text: "Plans start at forty-nine dollars monthly.",
      heading: "Plans",
      page: 7,
    },
  ],
};

/** The same documents with vectors in `space` from `vectorOf(source index)`. */
function withVectors(space: string, vectorOf: (i: number) => Float32Array): SourceDocument[] {
  return [...ranked, paraphrase].map((document, i) => ({
    ...document,
    vectors: { space, vectors: document.chunks.map(() => vectorOf(i)) },
  }));
}

describe("hybrid search", () => {
  let index: SearchIndex;
  beforeAll(() => {
    index = indexOn(stores, stores.disk);
  });

  it("is never worse than lexical alone: a random embedding leaves lexical's top 5 in place", async () => {
    const ws = "ws_random";
    const random = seeded(42);
    // No similarity floor: every vector hit, however weak, reaches the fusion.
    const index = indexOn(stores, stores.disk, { minSimilarity: 0 });
    await index.replaceSources(
      ws,
      withVectors("random8", () => randomVector(random)),
    );
    const query = { text: "pricing", limit: 5 };
    const lexical = await index.search(ws, query);
    const vector = randomVector(random);
    const hybrid = await index.search(ws, { ...query, vector, space: "random8" });
    expect(ids(hybrid)).toEqual(ids(lexical));
    // The test bites: the vector side disagrees, and fusing the two rankings as equals (plain
    // reciprocal rank fusion) would have changed the top 5.
    const vectorOnly = ids(
      await index.search(ws, { text: "", vector, space: "random8", limit: 30 }),
    );
    const lexicalAll = ids(await index.search(ws, { text: "pricing", limit: 30 }));
    const rrf = new Map<string, number>();
    for (const list of [lexicalAll, vectorOnly]) {
      list.forEach((id, rank) => {
        rrf.set(id, (rrf.get(id) ?? 0) + 1 / (60 + rank + 1));
      });
    }
    const rrfTop5 = [...rrf]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([id]) => id);
    expect(rrfTop5).not.toEqual(ids(lexical));
  });

  it("lifts a chunk lexical missed when the embedding knows it answers the query", async () => {
    const ws = "ws_semantic";
    // Every pricing chunk on one axis, the paraphrase on another: the query's axis.
    await index.replaceSources(
      ws,
      withVectors("good8", (i) => (i === ranked.length ? axis(0) : axis(1))),
    );
    const query = { text: "pricing cost", limit: 8 };
    const lexical = await index.search(ws, query);
    expect(ids(lexical)).not.toContain("kb_para#3");
    const hybrid = await index.search(ws, { ...query, vector: axis(0), space: "good8" });
    expect(ids(hybrid).slice(0, 5)).toEqual(ids(lexical).slice(0, 5));
    // Read from the chunks table by id: the vector table holds no text.
    expect(hybrid).toContainEqual({
      id: "kb_para#3",
      source_id: "kb_para",
      chunk_index: 3,
      text: "Plans start at forty-nine dollars monthly.",
      heading: "Plans",
      page: 7,
      score: expect.any(Number),
    });
    const scores = hybrid.map((hit) => hit.score);
    expect(scores.every((s) => s >= 0 && s <= 1)).toBe(true);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it("applies the filters to the vector side too, before its top-k cut", async () => {
    const nearest = (vector: Float32Array, filters: object) =>
      index
        .search("ws_semantic", { text: "", vector, space: "good8", limit: 1, filters })
        .then(ids);
    // Thirty chunks tie on axis 1: a filter applied after a top-1 cut would usually miss kb_29.
    expect(await nearest(axis(1), { sourceIds: ["kb_29"] })).toEqual(["kb_29#0"]);
    expect(await nearest(axis(0), {})).toEqual(["kb_para#3"]);
    expect(await nearest(axis(0), { excludeSourceIds: ["kb_para"] })).toEqual([]);
  });

  it("never mixes embedding spaces, and is lexical in a space with no vectors", async () => {
    const ws = "ws_spaces";
    await index.replaceSources(ws, [
      {
        ...doc("kb_four", ["four dimensions"]),
        vectors: { space: "small4", vectors: [[1, 0, 0, 0]] },
      },
      { ...doc("kb_eight", ["eight dimensions"]), vectors: { space: "big8", vectors: [axis(0)] } },
    ]);
    const inBig = await index.search(ws, { text: "", vector: axis(0), space: "big8", limit: 5 });
    expect(ids(inBig)).toEqual(["kb_eight#0"]);
    const inSmall = await index.search(ws, {
      text: "",
      vector: [1, 0, 0, 0],
      space: "small4",
      limit: 5,
    });
    expect(ids(inSmall)).toEqual(["kb_four#0"]);
    const unknown = await index.search(ws, {
      text: "dimensions",
      vector: axis(0),
      space: "other8",
      limit: 5,
    });
    expect(ids(unknown).sort()).toEqual(["kb_eight#0", "kb_four#0"]);
    await expect(
      index.replaceSource(ws, {
        ...doc("kb_x", ["x"]),
        vectors: { space: "no-dash", vectors: [[1]] },
      }),
    ).rejects.toThrow(/space/);
  });
});

describe.each([
  ["on local disk", (s: SearchStores): SearchLocation => s.disk],
  ["on the S3 emulator", (s: SearchStores): SearchLocation => s.s3],
])("a source's vectors %s", (_where, locate) => {
  it("go when it is reindexed without them (they embedded the old text), and when it is removed", async () => {
    const index = indexOn(stores, locate(stores));
    const ws = "ws_stale";
    const withVector = (id: string, i: number) => ({
      ...doc(id, [`old words ${id}`]),
      vectors: { space: "v8", vectors: [axis(i)] },
    });
    await index.replaceSources(ws, [withVector("kb_a", 2), withVector("kb_b", 3)]);
    await index.replaceSource(ws, doc("kb_a", ["new words"]));
    const nearest = (i: number, generation = 0) =>
      index.search(ws, { text: "", vector: axis(i), space: "v8", limit: 5, generation }).then(ids);
    expect(await nearest(2)).toEqual([]);
    expect(await nearest(3)).toEqual(["kb_b#0"]);
    // A fresh instance (another process) knows the workspace's spaces from the store alone.
    await indexOn(stores, locate(stores)).removeSource(ws, "kb_b");
    expect(await nearest(3, 1)).toEqual([]);
  });

  it("get an approximate index from a bulk load's optimize", async () => {
    const index = indexOn(stores, locate(stores), { vectorIndexAfterRows: 300 });
    const ws = "ws_bulk_vectors";
    const random = seeded(5);
    const vectors = Array.from({ length: 400 }, () => randomVector(random));
    await index.replaceSources(
      ws,
      [
        {
          ...doc(
            "kb_v",
            vectors.map((_, i) => `bulk ${i}`),
          ),
          vectors: { space: "b8", vectors },
        },
      ],
      { maintain: false },
    );
    await indexOn(stores, locate(stores), { vectorIndexAfterRows: 300 }).optimize(ws);
    // The optimize sealed the space's 400 vectors into one segment, indexed once.
    const [segment, ...others] = (await registryOf(locate(stores), ws)).filter(
      (table) => table.family === "vectors_b8" && table.level >= 0,
    );
    expect(others).toEqual([]);
    const db = await openDatabase(locate(stores), ws);
    const table = await db.openTable(segment?.name ?? "");
    expect(await table.indexStats("vector_idx")).toMatchObject({ indexType: "IVF_RQ" });
    const target = vectors[123] as Float32Array;
    const hits = await index.search(ws, { text: "", vector: target, space: "b8", limit: 1 });
    expect(ids(hits)).toEqual(["kb_v#123"]);
  });
});
