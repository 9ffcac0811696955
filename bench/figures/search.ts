import { mapLimit } from "../../lib/async.js";
import { loadConfig } from "../../lib/config.js";
import { embedChunks } from "../../lib/knowledge/indexing/embeddings.js";
import type { StoredChunks } from "../../lib/knowledge/indexing/indexer.js";
import { migrateWorkspace } from "../../lib/knowledge/indexing/migrate-index.js";
import { LiveSources } from "../../lib/knowledge/retrieval/live-sources.js";
import { IndexRetriever, type Retriever } from "../../lib/knowledge/retrieval/retrieval.js";
import type { Embedder } from "../../lib/llm/embeddings.js";
import { createLlm } from "../../lib/llm/provider.js";
import { loadLlmSettings } from "../../lib/llm/settings.js";
import { createSearchIndex, tokenize } from "../../lib/search/index.js";
import { FakeOpenAI } from "../../test/support/fake-openai.js";
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
import { FILTERED_SOURCES, filteredSearchRows } from "../search/filtered.js";
import { type SeededLevel, seedIndexedSources } from "../search/seed.js";

/** A retriever measured at every level up to its `maxChunks`, made fresh for each first search. */
interface Contender {
  name: string;
  /** Largest level it is measured at (every level when absent). */
  maxChunks?: number;
  /** A new retriever over a seeded level; anything else it needs (vectors) it writes here, untimed. */
  create(ctx: BenchContext, level: SeededLevel): Promise<Retriever>;
}

/** The fake provider's answer time for every embeddings request (a query's or a batch's). */
const EMBEDDING_LATENCY_MS = 20;
const EMBEDDING_DIMENSIONS = 512;
/**
 * Hybrid stops at 10k chunks: embedding 100k chunks through the fake server (JSON vectors of 512
 * floats, 128 to a request) would take minutes before the first search, on top of lexical's.
 */
const HYBRID_MAX_CHUNKS = 10_000;

let provider: Promise<{ fake: FakeOpenAI; embedder: Embedder }> | undefined;
/**
 * The fake OpenAI-compatible server (test/support/fake-openai.ts) in this process, every
 * embeddings request answered after a fixed latency, and the service's own embedder pointed at
 * it; started on first use, closed when the figure ends.
 */
async function fakeEmbedder(): Promise<Embedder> {
  provider ??= FakeOpenAI.start().then((fake) => {
    fake.fallback("embeddings", { delayMs: EMBEDDING_LATENCY_MS });
    const settings = loadLlmSettings({
      OPENAI_API_KEY: "bench",
      OPENAI_BASE_URL: fake.baseURL,
      EMBEDDING_MODEL: "bench-embedding",
      EMBEDDING_DIMENSIONS: String(EMBEDDING_DIMENSIONS),
    });
    const { embedder } = createLlm(settings);
    if (!embedder) throw new Error("no embedder for the fake provider");
    return { fake, embedder };
  });
  return (await provider).embedder;
}

async function closeFake(): Promise<void> {
  await (await provider)?.fake.close();
  provider = undefined;
}

/**
 * A retriever as a fresh instance has it: a new index handle (nothing open, nothing cached) over
 * the level's persisted index, which the migration writes from the seeded chunk sets (and their
 * vectors) the first time; later calls find every row in place and change nothing.
 */
async function freshRetriever(
  ctx: BenchContext,
  level: SeededLevel,
  embedder?: Embedder,
): Promise<Retriever> {
  const stores = await ctx.stores();
  // In the runtime's S3 emulator, where the local functions keep it.
  const index = () => createSearchIndex(loadConfig(), stores.table);
  await migrateWorkspace({ ...stores, search: index(), space: embedder?.space }, level.workspaceId);
  return new IndexRetriever({ index: index(), live: new LiveSources(stores.table), embedder });
}

const contenders: Contender[] = [
  { name: "lexical", create: (ctx, level) => freshRetriever(ctx, level) },
  {
    name: "hybrid",
    maxChunks: HYBRID_MAX_CHUNKS,
    async create(ctx, level) {
      const { blobs } = await ctx.stores();
      const embedder = await fakeEmbedder();
      // Idempotent: a chunk set's vectors are written once, the first time a level is built.
      await mapLimit(level.chunkKeys, 4, async (key) => {
        const set = await blobs.getJson<StoredChunks>(key);
        if (set) await embedChunks({ blobs, embedder }, key, set.chunks);
      });
      return freshRetriever(ctx, level, embedder);
    },
  },
];

const contendersAt = (chunks: number) =>
  contenders.filter((c) => chunks <= (c.maxChunks ?? Number.POSITIVE_INFINITY));

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
  for (const c of contendersAt(level.chunks)) {
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
    ...contendersAt(level.chunks).map((c) =>
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
  for (const c of contendersAt(level.chunks)) {
    const retriever = retrievers.get(c.name);
    cases[c.name] = () =>
      perQuery(async (query) => retriever?.search(level.workspaceId, query, 10));
  }
  cases.floor = () => perQuery(async (query) => scan.search(query, 10));
  const samples = await interleave(warmRounds(level.chunks), cases);
  const floor = `${label(level.chunks)}: brute-force BM25 scan`;
  return [
    ...contendersAt(level.chunks).map((c) =>
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
    "retriever (lexical; hybrid up to 10k chunks) runs on the persisted index in the S3 " +
    "emulator (written from the chunk sets by the migration, untimed) and is measured on its " +
    "first search with a fresh index handle (listing the sources, opening the workspace's " +
    "tables), then warm. Floor: BM25 by hand with no index, a scan " +
    "of every token of every chunk per query; for the first search, reading the same chunk sets " +
    "from S3 and preparing that scan. Store calls are timed by SDK middleware (concurrent calls " +
    "are summed, so that column can exceed the wall time). At the largest size, a metadata " +
    `filter selecting ${FILTERED_SOURCES} sources, through \`POST /api/knowledge/search\`, beside ` +
    "the same queries unfiltered (the floor).",
  async run(ctx) {
    const stores = await ctx.stores();
    const calls = storeCalls(stores);
    const corpus = new Corpus(51);
    const queries = Array.from({ length: QUERIES }, () => corpus.query());
    const first: Row[] = [];
    const warm: Row[] = [];
    const filtered: Row[] = [];
    const levels = ctx.quick ? QUICK_LEVELS : LEVELS;
    let tokenizerTexts: string[] = [];
    try {
      for (const chunks of levels) {
        const workspace = await ctx.workspace(`search ${chunks}`);
        const { workspaceId } = workspace;
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
        if (chunks === levels.at(-1)) {
          ctx.log(`search: filtered and unfiltered through the API at ${label(chunks)}`);
          filtered.push(
            ...(await filteredSearchRows(
              ctx,
              workspace,
              seeded,
              queries,
              warmRounds(chunks),
              label(chunks),
            )),
          );
        }
      }
    } finally {
      await closeFake();
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
          caption: `Through the API, a filter selecting ${FILTERED_SOURCES} sources, ${QUERIES} queries a round`,
          compare: "time",
          columns: [
            { key: "time", label: "time", unit: "ms" },
            { key: "chosen", label: `hits from the ${FILTERED_SOURCES} sources, of all` },
            { key: "owed", label: "hits they hold for a top 10", digits: 0 },
          ],
          rows: filtered,
        },
        {
          caption: "Tokenizing the chunks alone",
          compare: "time",
          columns: [{ key: "time", label: "time", unit: "ms" }],
          rows: await tokenizerRows(tokenizerTexts, ctx.quick ? 2 : 3),
        },
      ],
      notes: [
        `Hybrid: \`HybridRetriever\` (BM25 and brute-force cosine over vectors, fused by RRF) with ` +
          `the service's embedder pointed at the fake OpenAI-compatible server in this process, ` +
          `which answers every embeddings request after ${EMBEDDING_LATENCY_MS} ms (vectors of ` +
          `${EMBEDDING_DIMENSIONS} dimensions); each chunk set's vectors were written by ` +
          "`embedChunks` before its first search, untimed. Every hybrid search embeds its query: " +
          `that request's ${EMBEDDING_LATENCY_MS} ms is in every hybrid row. Not measured at ` +
          `100k chunks: embedding them through the fake server alone would take minutes.`,
        "The scan matches whole words only; lexical also expands words longer than 3 characters " +
          "by prefix, so it considers somewhat more candidates per query.",
        `Filtered: ${FILTERED_SOURCES} sources spread over the workspace (the first, middle and ` +
          "last seeded) get an attribute by `PATCH`, and `filters` selects it with `eq`; both " +
          "cases go through the runtime's API over HTTP (key check, rate limit, the source " +
          "records read for what is live), warm, lexical. `hits they hold for a top 10` counts, " +
          "query by query, those sources' chunks holding one of its words whole, up to 10 (a full " +
          "page where they can fill one; search also matches longer words by prefix, so it may " +
          "find more). The figure fails unless every filtered answer comes from those sources " +
          "and holds at least that many: the filter runs inside the engine, before its cut " +
          "(decision 0013), where a filter applied to the unfiltered row's hits would keep only " +
          `its \`hits from the ${FILTERED_SOURCES} sources\`.`,
      ],
    };
  },
};
