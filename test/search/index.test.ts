import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  SearchFilters,
  SearchHit,
  SearchIndex,
  SearchLocation,
} from "../../lib/search/index.js";
import { doc, indexOn, type SearchStores, startSearchStores } from "./support.js";

let stores: SearchStores;
beforeAll(async () => {
  stores = await startSearchStores();
});
afterAll(() => stores.close());

const ids = (hits: SearchHit[]) => hits.map((hit) => hit.id);
let workspaces = 0;
/** A workspace no other test has written to. */
const freshWorkspace = () => `ws_test${++workspaces}`;

describe.each([
  ["on local disk", (s: SearchStores): SearchLocation => s.disk],
  ["on the S3 emulator", (s: SearchStores): SearchLocation => s.s3],
])("the search index %s", (_where, locate) => {
  let index: SearchIndex;
  beforeAll(() => {
    index = indexOn(stores, locate(stores));
  });

  it("answers no hits for a workspace with nothing indexed", async () => {
    expect(await index.search(freshWorkspace(), { text: "pricing", limit: 5 })).toEqual([]);
  });

  it("finds a source's chunks by their words, with every field and a 0-1 score", async () => {
    const ws = freshWorkspace();
    await index.replaceSource(ws, {
      source: { id: "kb_1", type: "file", crawlId: null },
      chunks: [
        { chunkIndex: 0, text: "Our Pro plan costs $49 a month.", heading: "Pricing", page: 2 },
        { chunkIndex: 1, text: "Support answers within a day.", heading: null, page: 3 },
      ],
    });
    const hits = await index.search(ws, { text: "pro plan", limit: 5 });
    expect(hits).toEqual([
      {
        id: "kb_1#0",
        source_id: "kb_1",
        chunk_index: 0,
        text: "Our Pro plan costs $49 a month.",
        heading: "Pricing",
        page: 2,
        score: expect.any(Number),
      },
    ]);
    expect(hits[0]?.score).toBeGreaterThan(0);
    expect(hits[0]?.score).toBeLessThan(1);
  });

  it("ranks by BM25 over the text and, boosted, the heading", async () => {
    const ws = freshWorkspace();
    await index.replaceSources(ws, [
      doc("kb_a", ["onboarding takes a week for most teams"], { heading: "Setup" }),
      doc("kb_b", ["what a new team does first"], { heading: "Onboarding" }),
      doc("kb_c", ["onboarding onboarding onboarding checklist for onboarding"]),
      doc("kb_d", ["nothing relevant here at all"]),
    ]);
    const hits = await index.search(ws, { text: "onboarding", limit: 10 });
    // The word once in a heading outweighs it once in a text; four times outweighs once.
    expect(ids(hits).sort()).toEqual(["kb_a#0", "kb_b#0", "kb_c#0"]);
    expect(ids(hits).at(-1)).toBe("kb_a#0");
    expect(hits.map((h) => h.score)).toEqual([...hits.map((h) => h.score)].sort((a, b) => b - a));
  });

  it("replaces only the source written: fewer chunks on reindex, other sources untouched", async () => {
    const ws = freshWorkspace();
    await index.replaceSource(ws, doc("kb_a", ["alpha one", "alpha two", "alpha three"]));
    await index.replaceSource(ws, doc("kb_b", ["alpha from b"]));
    await index.replaceSource(ws, doc("kb_a", ["alpha rewritten"]));
    const hits = await index.search(ws, { text: "alpha", limit: 10 });
    expect(ids(hits).sort()).toEqual(["kb_a#0", "kb_b#0"]);
    expect(hits.find((h) => h.id === "kb_a#0")?.text).toBe("alpha rewritten");
    expect(await index.search(ws, { text: "three", limit: 10 })).toEqual([]);
  });

  it("removes a source, and a source written with no chunks", async () => {
    const ws = freshWorkspace();
    await index.replaceSources(ws, [
      doc("kb_a", ["gamma a"]),
      doc("kb_b", ["gamma b"]),
      doc("kb_c", ["gamma c"]),
    ]);
    await index.removeSource(ws, "kb_a");
    await index.replaceSource(ws, doc("kb_b", []));
    expect(ids(await index.search(ws, { text: "gamma", limit: 10 }))).toEqual(["kb_c#0"]);
  });

  describe("filters", () => {
    const ws = freshWorkspace();
    beforeAll(async () => {
      // Twenty strong matches from one source, one weak match in each of the others: a filter
      // applied after a top-k cut would find nothing of the others.
      await index.replaceSources(ws, [
        doc(
          "kb_many",
          Array.from({ length: 20 }, (_, i) => `churn churn churn churn report ${i}`),
        ),
        doc("kb_text", ["churn is mentioned once in a long sentence about other things"]),
        doc("kb_url", ["churn appears here too, once, among many other words"], {
          source: { id: "kb_url", type: "url", crawlId: "crawl_1" },
        }),
        doc("kb_page", ["churn also on this crawled page with plenty of other words"], {
          source: { id: "kb_page", type: "url", crawlId: "crawl_2" },
        }),
      ]);
    });
    const search = (filters: SearchFilters, limit = 1) =>
      index.search(ws, { text: "churn", limit, filters }).then(ids);

    it("are applied before ranking, so a top-1 still finds a filtered source's weak match", async () => {
      expect(await search({})).toEqual([expect.stringMatching(/^kb_many#/)]);
      expect(await search({ sourceIds: ["kb_text"] })).toEqual(["kb_text#0"]);
      expect(await search({ types: ["url"], sourceIds: ["kb_page", "kb_many"] })).toEqual([
        "kb_page#0",
      ]);
      expect(await search({ types: ["url"], excludeSourceIds: ["kb_page"] })).toEqual(["kb_url#0"]);
      expect(await search({ excludeSourceIds: ["kb_many"], types: ["text"] })).toEqual([
        "kb_text#0",
      ]);
    });

    it("match nothing when a list to keep from is empty", async () => {
      expect(await search({ sourceIds: [] }, 10)).toEqual([]);
      expect(await search({ types: [] }, 10)).toEqual([]);
      expect((await search({ excludeSourceIds: [] }, 30)).length).toBe(23);
    });
  });

  it("takes source ids with quotes and backslashes as plain values, never as SQL", async () => {
    const ws = freshWorkspace();
    const odd = "kb_it's \\ a 'quoted' id') OR ('1'='1";
    await index.replaceSources(ws, [doc(odd, ["delta odd"]), doc("kb_plain", ["delta plain"])]);
    expect(
      ids(await index.search(ws, { text: "delta", limit: 5, filters: { sourceIds: [odd] } })),
    ).toEqual([`${odd}#0`]);
    expect(
      ids(
        await index.search(ws, { text: "delta", limit: 5, filters: { excludeSourceIds: [odd] } }),
      ),
    ).toEqual(["kb_plain#0"]);
    await index.removeSource(ws, odd);
    expect(ids(await index.search(ws, { text: "delta", limit: 5 }))).toEqual(["kb_plain#0"]);
  });

  it("reads query syntax in the user's words as words, never as an error", async () => {
    const ws = freshWorkspace();
    await index.replaceSource(ws, doc("kb_a", ["pricing AND plans for teams"]));
    for (const text of [
      '"',
      "AND",
      "(",
      "*",
      "-",
      ":",
      "😀",
      'pricing" AND (plans OR *',
      "a:b -c",
    ]) {
      await expect(index.search(ws, { text, limit: 5 })).resolves.toBeInstanceOf(Array);
    }
    expect(ids(await index.search(ws, { text: 'pricing" AND (plans', limit: 5 }))).toEqual([
      "kb_a#0",
    ]);
    expect(await index.search(ws, { text: "😀 *", limit: 5 })).toEqual([]);
  });

  it("finds words in scripts written without spaces", async () => {
    const ws = freshWorkspace();
    await index.replaceSources(ws, [
      doc("kb_ja", ["料金プランは月額49ドルです。"]),
      doc("kb_zh", ["我们的价格很合理"]),
    ]);
    expect(ids(await index.search(ws, { text: "料金", limit: 5 }))).toEqual(["kb_ja#0"]);
    expect(ids(await index.search(ws, { text: "价格", limit: 5 }))).toEqual(["kb_zh#0"]);
  });

  it("keeps each workspace in its own database: a query reaches no other", async () => {
    const [a, b] = [freshWorkspace(), freshWorkspace()];
    await index.replaceSource(a, doc("kb_secret", ["epsilon secret"]));
    expect(await index.search(b, { text: "epsilon", limit: 5 })).toEqual([]);
    expect(ids(await index.search(a, { text: "epsilon", limit: 5 }))).toEqual(["kb_secret#0"]);
    for (const bad of [`../${a}`, `${a}/..`, "", "ws a", "s3://x"]) {
      await expect(index.search(bad, { text: "epsilon", limit: 5 })).rejects.toThrow(/workspace/);
      await expect(index.replaceSource(bad, doc("kb_x", ["x"]))).rejects.toThrow(/workspace/);
    }
  });

  it("shows one instance's writes to another that has the table open already once a search brings a higher generation", async () => {
    const ws = freshWorkspace();
    const other = indexOn(stores, locate(stores));
    const search = (generation: number) =>
      other.search(ws, { text: "zeta", limit: 5, generation }).then(ids);
    await index.replaceSource(ws, doc("kb_a", ["zeta first"]));
    expect(await search(1)).toEqual(["kb_a#0"]);
    await index.replaceSource(ws, doc("kb_b", ["zeta second"]));
    await index.removeSource(ws, "kb_a");
    // The same generation: nothing counted has changed, so the open version serves.
    expect(await search(1)).toEqual(["kb_a#0"]);
    // Searches racing with the higher one all wait for the newest version.
    const racing = await Promise.all([search(3), search(3), search(2)]);
    expect(racing).toEqual([["kb_b#0"], ["kb_b#0"], ["kb_b#0"]]);
  });

  it("shows another instance's writes to a search without a generation within readConsistencySeconds", async () => {
    const ws = freshWorkspace();
    const strict = indexOn(stores, locate(stores), { readConsistencySeconds: 0 });
    await index.replaceSource(ws, doc("kb_a", ["theta first"]));
    expect(ids(await strict.search(ws, { text: "theta", limit: 5 }))).toEqual(["kb_a#0"]);
    await index.replaceSource(ws, doc("kb_b", ["theta second"]));
    expect(ids(await strict.search(ws, { text: "theta", limit: 5 })).sort()).toEqual([
      "kb_a#0",
      "kb_b#0",
    ]);
  });
});

describe("open workspaces", () => {
  it("past the memory bound, the least recently searched is closed and reopened when searched again", async () => {
    // One workspace's connection and two table handles (registry, recent chunks) fill it.
    const index = indexOn(stores, stores.disk, { openWorkspacesBytes: 600 * 1024 });
    await index.replaceSource("ws_lru_a", doc("kb_a", ["lru alpha"]));
    await index.replaceSource("ws_lru_b", doc("kb_b", ["lru beta"]));
    for (let round = 0; round < 3; round++) {
      expect(ids(await index.search("ws_lru_a", { text: "lru", limit: 5 }))).toEqual(["kb_a#0"]);
      expect(ids(await index.search("ws_lru_b", { text: "lru", limit: 5 }))).toEqual(["kb_b#0"]);
    }
  });
});

describe("the search index's layout on disk", () => {
  it("is one database per workspace under the base directory", async () => {
    const index = indexOn(stores, stores.disk);
    await index.replaceSource("ws_layout", doc("kb_a", ["layout"]));
    expect(existsSync(join(stores.disk.uri, "ws_layout", "recent_chunks.lance"))).toBe(true);
    expect(existsSync(join(stores.disk.uri, "ws_layout", "segments.lance"))).toBe(true);
  });
});
