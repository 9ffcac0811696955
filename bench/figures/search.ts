import { mapLimit } from "../../lib/async.js";
import type { StoredChunks } from "../../lib/knowledge/indexer.js";
import { LexicalRetriever, type Retriever, tokenize } from "../../lib/knowledge/retrieval.js";
import { Corpus } from "../core/corpus.js";
import type { BenchContext, Figure, Row } from "../core/figure.js";
import { interleave, timeSync } from "../core/measure.js";
import { summarize } from "../core/stats.js";
import {
  type Measured,
  type StoreCalls,
  storeCalls,
  storeCells,
  storeColumns,
} from "../core/store-calls.js";
import { BruteForceBm25, words } from "../search/brute-force.js";
import { type SeededLevel, seedIndexedSources } from "../search/seed.js";

/** A retriever measured at every level, made fresh for each cold first search. */
interface Contender {
  name: string;
  /** A new retriever over a seeded level; anything else it needs (vectors) it writes here, untimed. */
  create(ctx: BenchContext, level: SeededLevel): Promise<Retriever>;
}

const contenders: Contender[] = [
  { name: "lexical", create: async (ctx) => new LexicalRetriever(await ctx.stores()) },
  // SLOT (hybrid): `HybridRetriever` (lib/knowledge/hybrid.ts) joins as one more entry,
  // { name: "hybrid", create }, where `create` starts the in-process fake OpenAI-compatible server
  // (test/support/fake-openai.ts: a fixed latency, no model key), writes every chunk set's
  // vectors with `embedChunks` (lib/knowledge/embeddings.ts), untimed, and answers
  // `new HybridRetriever({ ...stores, lexical: new LexicalRetriever(stores), embedder })`.
  // Both tables then get a hybrid row at every level, against the same floors.
];

const LEVELS = [1_000, 10_000, 100_000];
const QUICK_LEVELS = [500, 2_000];
const CHUNKS_PER_SOURCE = 100;
const QUERIES = 20;
/** Cold builds are slow at scale: fewer of them where each takes long. */
const buildRounds = (chunks: number) => (chunks <= 1_000 ? 3 : chunks <= 10_000 ? 2 : 1);
const warmRounds = (chunks: number) => (chunks < 100_000 ? 3 : 2);
const label = (chunks: number) => `${chunks.toLocaleString("en-US")} chunks`;

function row(name: string, samples: Measured[], floor?: string): Row {
  return { name, ...(floor ? { floor } : {}), cells: storeCells(samples, "time") };
}

interface Level extends SeededLevel {
  chunks: number;
  queries: string[];
}

/**
 * Each contender's first search in a fresh instance, beside what a scan needs before its first
 * query. Answers the rows, and the last warm retrievers and scan for the warm queries.
 */
async function firstSearch(ctx: BenchContext, calls: StoreCalls, level: Level) {
  const { blobs } = await ctx.stores();
  const retrievers = new Map<string, Retriever>();
  let scan: BruteForceBm25 | undefined;
  const cases: Record<string, () => Promise<Measured>> = {};
  for (const c of contenders) {
    cases[c.name] = async () => {
      const retriever = await c.create(ctx, level);
      retrievers.set(c.name, retriever);
      return calls.measure(() => retriever.search(level.workspaceId, level.queries[0] ?? "", 10));
    };
  }
  cases.floor = () =>
    calls.measure(async () => {
      const sets = await mapLimit(level.chunkKeys, 8, (key) => blobs.getJson<StoredChunks>(key));
      scan = new BruteForceBm25(sets.flatMap((set) => set?.chunks.map((c) => c.text) ?? []));
    });
  const samples = await interleave(buildRounds(level.chunks), cases);
  const floor = `${label(level.chunks)}: read chunk sets + prepare scan`;
  const rows = [
    ...contenders.map((c) =>
      row(`${label(level.chunks)}: ${c.name}`, samples[c.name] ?? [], floor),
    ),
    row(floor, samples.floor ?? []),
  ];
  if (!scan) throw new Error("the scan was not prepared");
  return { rows, retrievers, scan };
}

/** Every query against each warm contender and the scan, query by query. */
async function warmSearch(
  calls: StoreCalls,
  level: Level,
  retrievers: Map<string, Retriever>,
  scan: BruteForceBm25,
): Promise<Row[]> {
  const perQuery = async (search: (query: string) => Promise<unknown>) => {
    const samples: Measured[] = [];
    for (const query of level.queries) samples.push(await calls.measure(() => search(query)));
    return samples;
  };
  const cases: Record<string, () => Promise<Measured[]>> = {};
  for (const c of contenders) {
    const retriever = retrievers.get(c.name);
    cases[c.name] = () =>
      perQuery(async (query) => retriever?.search(level.workspaceId, query, 10));
  }
  cases.floor = () => perQuery(async (query) => scan.search(query, 10));
  const samples = await interleave(warmRounds(level.chunks), cases);
  const floor = `${label(level.chunks)}: brute-force BM25 scan`;
  return [
    ...contenders.map((c) =>
      row(`${label(level.chunks)}: ${c.name}`, samples[c.name]?.flat() ?? [], floor),
    ),
    row(floor, samples.floor?.flat() ?? []),
  ];
}

/** `tokenize` (what the lexical index runs on every chunk) beside a plain regex word split. */
async function tokenizerRows(texts: string[], rounds: number): Promise<Row[]> {
  const samples = await interleave(rounds, {
    segmenter: () => timeSync(() => texts.reduce((n, text) => n + tokenize(text).length, 0)),
    regex: () => timeSync(() => texts.reduce((n, text) => n + words(text).length, 0)),
  });
  const floor = `${label(texts.length)}: regex word split`;
  return [
    {
      name: `${label(texts.length)}: tokenize() (Intl.Segmenter)`,
      floor,
      cells: { time: summarize(samples.segmenter) },
    },
    { name: floor, cells: { time: summarize(samples.regex) } },
  ];
}

export const figure: Figure = {
  number: 5,
  id: "search",
  title: "Search latency",
  description:
    `Workspaces of 1k, 10k and 100k chunks (${CHUNKS_PER_SOURCE} per source, about 850 ` +
    "characters each, Zipf-distributed words) written straight to the emulated table and bucket " +
    `as the indexer leaves them, and ${QUERIES} fixed queries of two or three words. Each ` +
    "retriever is measured on its first search in a fresh instance (listing the sources, loading " +
    "the chunk sets, building the index), then warm. Floor: BM25 by hand with no index, a scan " +
    "of every token of every chunk per query; for the first search, reading the same chunk sets " +
    "from S3 and preparing that scan. Store calls are timed by SDK middleware (concurrent calls " +
    "are summed, so that column can exceed the wall time).",
  async run(ctx) {
    const stores = await ctx.stores();
    const calls = storeCalls(stores);
    const corpus = new Corpus(51);
    const queries = Array.from({ length: QUERIES }, () => corpus.query());
    const first: Row[] = [];
    const warm: Row[] = [];
    let tokenizerTexts: string[] = [];
    for (const chunks of ctx.quick ? QUICK_LEVELS : LEVELS) {
      const { workspaceId } = await ctx.workspace(`search ${chunks}`);
      ctx.log(`search: seeding ${label(chunks)}`);
      const seeded = await seedIndexedSources(
        stores,
        workspaceId,
        chunks,
        CHUNKS_PER_SOURCE,
        corpus,
      );
      const level: Level = { ...seeded, chunks, queries };
      if (chunks <= 10_000) tokenizerTexts = level.texts;
      ctx.log(`search: first and warm searches at ${label(chunks)}`);
      const cold = await firstSearch(ctx, calls, level);
      first.push(...cold.rows);
      warm.push(...(await warmSearch(calls, level, cold.retrievers, cold.scan)));
    }
    const columns = [{ key: "time", label: "time", unit: "ms" }, ...storeColumns];
    return {
      tables: [
        { caption: "First search in a fresh instance", compare: "time", columns, rows: first },
        {
          caption: `Warm search, ${QUERIES} queries a round`,
          compare: "time",
          columns,
          rows: warm,
        },
        {
          caption: "Tokenizing the chunks alone",
          compare: "time",
          columns: [{ key: "time", label: "time", unit: "ms" }],
          rows: await tokenizerRows(tokenizerTexts, ctx.quick ? 2 : 3),
        },
      ],
      notes: [
        "The scan matches whole words only; lexical also expands words longer than 3 characters " +
          "by prefix, so it considers somewhat more candidates per query.",
      ],
    };
  },
};
