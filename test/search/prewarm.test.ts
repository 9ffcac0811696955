import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import type { Table as LanceTable } from "@lancedb/lancedb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SearchHit, SearchLocation } from "../../lib/search/index.js";
import { Prewarmer } from "../../lib/search/prewarm.js";
import { doc, indexOn, registryOf, type SearchStores, startSearchStores } from "./support.js";

/**
 * What a warm search reads from S3, counted by a proxy in front of the emulator: with its chunk
 * tables' full-text indexes prewarmed, only its hits' rows; the indexes again only after a
 * rebuild added rows to them.
 */

interface Recorder {
  location: SearchLocation;
  /** Paths of the objects read (GET) since the last `reset`. */
  reads: string[];
  reset(): void;
  close(): Promise<void>;
}

async function recording(location: SearchLocation): Promise<Recorder> {
  const target = new URL(location.s3?.endpoint ?? "");
  const recorder = { reads: [] as string[] };
  const proxy = createServer((incoming, answer) => {
    if (incoming.method === "GET") recorder.reads.push(decodeURIComponent(incoming.url ?? ""));
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (response) => {
        answer.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(answer);
      },
    );
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    location: {
      ...location,
      s3: {
        ...(location.s3 ?? { region: "", accessKeyId: "", secretAccessKey: "" }),
        endpoint: `http://127.0.0.1:${port}`,
      },
    },
    get reads() {
      return recorder.reads;
    },
    reset() {
      recorder.reads = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}

const ids = (hits: SearchHit[]) => hits.map((hit) => hit.id).sort();
/** Reads of index files of a table, or of a family's segments (`chunks` for `chunks_<id>`). */
const indexReads = (recorder: Recorder, table: string) =>
  recorder.reads.filter((path) => new RegExp(`/${table}(_[a-z0-9]+)?\\.lance/_indices/`).test(path))
    .length;

let stores: SearchStores;
let recorder: Recorder;

beforeAll(async () => {
  stores = await startSearchStores();
  recorder = await recording(stores.s3);
});
afterAll(async () => {
  await recorder.close();
  await stores.close();
});

/** Ten sources of 20 chunks, chunk `i` of source `s` holding the words `s${s}` and `c${i}`. */
const corpus = Array.from({ length: 10 }, (_, s) =>
  doc(
    `kb_${s}`,
    Array.from({ length: 20 }, (_, i) => `s${s} c${i} shared words`),
  ),
);

describe("a warm search on S3", () => {
  it("reads no full-text index from the store once a search has prewarmed the chunk tables", async () => {
    const ws = "ws_prewarm";
    const writer = indexOn(stores, stores.s3, { foldAfterRows: 30 });
    await writer.replaceSources(ws, corpus, { maintain: false });
    await writer.optimize(ws);
    const reader = indexOn(stores, recorder.location);
    const search = (text: string, generation: number) =>
      reader.search(ws, { text, limit: 50, generation });

    expect(ids(await search("s1 c2", 1))).toContain("kb_1#2");
    recorder.reset();
    expect(ids(await search("s3", 1))).toEqual(corpus[3]?.chunks.map((_, i) => `kb_3#${i}`).sort());
    expect(ids(await search("c7", 1))).toHaveLength(10);
    expect(indexReads(recorder, "chunks")).toBe(0);
    expect(recorder.reads.some((path) => /\/chunks_[a-z0-9]+\.lance\/data\//.test(path))).toBe(
      true,
    );

    // Forty chunks written: the recent table (prewarmed as the search first sees it) reaches the
    // threshold and is sealed into a new segment, prewarmed as the search first sees it.
    await writer.replaceSource(
      ws,
      doc(
        "kb_new",
        Array.from({ length: 40 }, (_, i) => `fresh c${i}`),
      ),
    );
    await search("fresh", 2);
    recorder.reset();
    expect(ids(await search("fresh c39", 2))).toContain("kb_new#39");
    expect(ids(await search("s9 c19", 2))).toContain("kb_9#19");
    expect(indexReads(recorder, "chunks")).toBe(0);

    // Each version of the recent table is prewarmed, whether or not its index grew: a source
    // written again with as many chunks rebuilds it with the same number of rows.
    for (const [generation, word] of [
      [3, "tiny"],
      [4, "other"],
    ] as const) {
      await writer.replaceSource(
        ws,
        doc(
          "kb_small",
          Array.from({ length: 10 }, (_, i) => `${word} c${i}`),
        ),
      );
      await search(word, generation);
      recorder.reset();
      expect(ids(await search(`${word} c3`, generation))).toContain("kb_small#3");
      expect(indexReads(recorder, "recent_chunks")).toBe(0);
      expect(indexReads(recorder, "chunks")).toBe(0);
    }
  });

  it("reads the rows of its winners only: none of a segment whose hits miss the cut", async () => {
    const ws = "ws_winners";
    const writer = indexOn(stores, stores.s3);
    // Two segments: sources 0–4 in the first, 5–9 in the second.
    for (const half of [corpus.slice(0, 5), corpus.slice(5)]) {
      await writer.replaceSources(ws, half, { maintain: false });
      await writer.optimize(ws);
    }
    const segments = (await registryOf(stores.s3, ws)).filter(
      (table) => table.level >= 0 && table.retired_at === 0,
    );
    expect(segments).toHaveLength(2);
    const reader = indexOn(stores, recorder.location);
    await reader.search(ws, { text: "s0", limit: 1, generation: 1 });
    recorder.reset();
    // `c2` is in both segments' rows; `s1` only in the first's: the second has hits, none of them
    // the best one.
    const hits = await reader.search(ws, { text: "s1 c2", limit: 1, generation: 1 });
    expect(ids(hits)).toEqual(["kb_1#2"]);
    expect(hits[0]).toMatchObject({
      source_id: "kb_1",
      chunk_index: 2,
      text: "s1 c2 shared words",
    });
    const dataReads = (name: string) =>
      recorder.reads.filter((path) => path.includes(`/${name}.lance/data/`)).length;
    const [first, second] = segments.map((table) => dataReads(table.name));
    expect(first).toBeGreaterThan(0);
    expect(second).toBe(0);
  });

  it("reads the indexes on every search where the chunk tables are larger than prewarmMaxRows", async () => {
    const ws = "ws_prewarm_large";
    const writer = indexOn(stores, stores.s3);
    await writer.replaceSources(ws, corpus, { maintain: false });
    await writer.optimize(ws);
    const reader = indexOn(stores, recorder.location, { prewarmMaxRows: 199 });
    await reader.search(ws, { text: "s1", limit: 5, generation: 1 });
    recorder.reset();
    expect(ids(await reader.search(ws, { text: "s2 c3", limit: 1, generation: 1 }))).toEqual([
      "kb_2#3",
    ]);
    expect(indexReads(recorder, "chunks")).toBeGreaterThan(0);
  });
});

describe("the prewarmer's memory of tables", () => {
  /** A table that counts its prewarms: the engine's answers the prewarmer reads, no store. */
  const table = () => {
    const calls = { prewarms: 0 };
    const fake = {
      version: async () => 1,
      countRows: async () => 10,
      indexStats: async () => ({ numIndexedRows: 10 }),
      prewarmIndex: async () => {
        calls.prewarms++;
      },
    };
    return { calls, table: fake as unknown as LanceTable };
  };

  it("prewarms a version once, and forgets the tables a merge dropped", async () => {
    const prewarmer = new Prewarmer();
    const a = table();
    const b = table();
    await prewarmer.warm("a", a.table, 100, false);
    await prewarmer.warm("b", b.table, 100, false);
    await prewarmer.warm("a", a.table, 100, false);
    expect([a.calls.prewarms, b.calls.prewarms]).toEqual([2, 2]);
    prewarmer.retain(new Set(["a"]));
    await prewarmer.warm("a", a.table, 100, false);
    await prewarmer.warm("b", b.table, 100, false);
    // `a` was kept, so not prewarmed again; `b` was forgotten, so seen afresh.
    expect([a.calls.prewarms, b.calls.prewarms]).toEqual([2, 4]);
  });
});
