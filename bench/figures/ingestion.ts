import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { BUCKET_NAME } from "../../infra/local/runtime.js";
import { chunkDocument, normalizeDocument } from "../../lib/knowledge/indexing/chunking.js";
import { Corpus } from "../core/corpus.js";
import type { Figure, Row, Table } from "../core/figure.js";
import type { Report } from "../core/report.js";
import { resident } from "../core/resident.js";
import {
  type KindCount,
  readCount,
  readS3Counter,
  requestCost,
  requestCount,
  S3_PRICES,
  S3_REQUEST_KINDS,
  type S3RequestKind,
  type S3Tally,
  totals,
} from "../core/s3-counter.js";
import { summarize } from "../core/stats.js";
import type { RuntimeReady } from "../ingestion/protocol.js";
import {
  objectFileBytes,
  type RuntimeProcess,
  runFloor,
  startRuntimeProcess,
} from "../ingestion/runtime-client.js";
import { sourceText } from "../ingestion/texts.js";
import { buildSearchProbe, coldSearch } from "../search-engine/spawn.js";

/**
 * 10k and 100k chunks by default. `BENCH_INGESTION_MAX_CHUNKS=1000000` adds a million (1,200
 * sources of 1 MB): as long as the import takes, plus its floor.
 */
const LEVELS = [10_000, 100_000, 1_000_000].filter(
  (chunks) => chunks <= Number(process.env.BENCH_INGESTION_MAX_CHUNKS ?? 100_000),
);
const QUICK_LEVELS = [2_000, 5_000];
const SOURCE_BYTES = 1_000_000;
const SEED = 27;
/** The small write whose cost must not grow with the workspace (issue 27: at most 1.5×). */
const WRITE_CHUNKS = 100;
/**
 * Writes measured per size: one cycle of the recent table (20 × 100 chunks = `foldAfterRows`), so
 * their mean is a write's whole cost, the seal it leads to included, wherever the cycle stood.
 */
const WRITES = 20;
const WARM_SEARCHES = 5;
/** Warm lexical searches timed through the API after the counted ones (issue 27: p95 ≤ 50 ms). */
const WARM_TIMED = 30;
const POLL_MS = 1000;
const API_KEY = "bench-ingestion-0123456789abcdef";
const S3_KEYS = { region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
/** The index area of the bucket: `lib/search` keeps each workspace under `search/<id>/`. */
const INDEX_AREA = ["search"];
/** The same figure measured on the previous design, shown beside this run's rows when present. */
const PREVIOUS = join(import.meta.dirname, "..", "baselines", "ingestion-previous.json");
const PREVIOUS_PREFIX = "previous design, ";

const label = (chunks: number) => `${chunks.toLocaleString("en-US")} chunks`;
const mb = (bytes: number) => bytes / 2 ** 20;
const seconds = (ms: number) => summarize([ms / 1000]);
const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

type ByKind = Record<S3RequestKind, KindCount>;

interface Level {
  chunks: number;
  actualChunks: number;
  sources: number;
  rawBytes: number;
  postedMs: number;
  importMs: number;
  peakBytes: number;
  finalBytes: number;
  runtimePeakMb: number;
  importAll: ByKind;
  importIndex: ByKind;
  warmAll: ByKind;
  coldAll: ByKind;
  coldFirstMs: number;
  /** Warm lexical searches through the API, each timed (ms). */
  warmMs: number[];
  writesIndex: number[];
  writesAll: number[];
  floor: { chunkMs: number; buildMs: number; bytes: number; peakMb: number; all: ByKind };
}

/** Calls the runtime's API with the figure's key; throws on anything but a 2xx. */
async function api<T>(ready: RuntimeReady, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${ready.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${API_KEY}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok)
    throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

interface ListedSource {
  id: string;
  status: string;
  chunk_count: number;
  last_error: string | null;
}

/** Every source of the workspace, page by page, as a client polls `GET /api/knowledge`. */
async function listSources(ready: RuntimeReady): Promise<ListedSource[]> {
  const all: ListedSource[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const page: { sources: ListedSource[]; nextCursor: string | null } = await api(
      ready,
      `/api/knowledge${query}`,
    );
    all.push(...page.sources);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

/** Waits until `ids` (or every source) are `indexed`, polling the API; a failed one throws. */
async function allIndexed(ready: RuntimeReady, count: number): Promise<ListedSource[]> {
  for (;;) {
    const sources = await listSources(ready);
    const failed = sources.find((s) => s.status === "failed");
    if (failed) throw new Error(`source ${failed.id} failed: ${failed.last_error}`);
    if (sources.length >= count && sources.every((s) => s.status === "indexed")) return sources;
    await sleep(POLL_MS);
  }
}

async function post(ready: RuntimeReady, text: string, name: string): Promise<string> {
  return (await api<{ id: string }>(ready, "/api/knowledge", { text, name })).id;
}

/** The index's bytes sampled every second (after each sample), from the emulator's folder. */
function sampleBytes(dir: string) {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, await objectFileBytes(dir));
      await sleep(POLL_MS);
    }
  })();
  return async () => {
    running = false;
    await loop;
    return peak;
  };
}

async function measureLevel(
  log: (message: string) => void,
  probe: string,
  chunks: number,
  queries: string[],
): Promise<Level> {
  const dataDir = await mkdtemp(join(tmpdir(), "bench-ingestion-"));
  let runtime: RuntimeProcess | undefined;
  try {
    runtime = await startRuntimeProcess({ dataDir, apiKey: API_KEY });
    const { ready, pid } = runtime;
    const workspaceDir = (id: string) => join(dataDir, "s3", BUCKET_NAME, "search", id);
    const counted = (reset = true) => readS3Counter(ready.counter, reset);
    const perSource = chunkDocument(
      normalizeDocument(sourceText(SEED, 0, SOURCE_BYTES)),
      ready.chunking,
    ).length;
    const sources = Math.max(1, Math.round(chunks / perSource));

    log(`ingestion: ${label(chunks)}, ${sources} sources of 1 MB through the API`);
    const stopSampling = sampleBytes(workspaceDir(ready.workspaceId));
    await counted();
    const started = performance.now();
    for (let i = 0; i < sources; i++) {
      await post(ready, sourceText(SEED, i, SOURCE_BYTES), `Ingestion ${i}`);
    }
    const postedMs = performance.now() - started;
    const listed = await allIndexed(ready, sources);
    const importMs = performance.now() - started;
    const importTally = await counted();
    const peakBytes = await stopSampling();
    const finalBytes = await objectFileBytes(workspaceDir(ready.workspaceId));
    const runtimePeakMb = (await resident(pid)).peakMb;

    log(`ingestion: ${label(chunks)}: searches`);
    const search = (query: string) =>
      api(ready, "/api/knowledge/search", { query, limit: 10 }) as Promise<unknown>;
    await search(queries[0] ?? "");
    await counted();
    for (const query of queries.slice(1, 1 + WARM_SEARCHES)) await search(query);
    const warmTally = await counted();
    const warmMs: number[] = [];
    for (const query of queries.slice(1 + WARM_SEARCHES)) {
      const started = performance.now();
      await search(query);
      warmMs.push(performance.now() - started);
    }
    await counted();
    const s3 = { endpoint: ready.counter, ...S3_KEYS };
    const engineEnv = {
      AWS_ENDPOINT_URL_S3: ready.counter,
      AWS_REGION: S3_KEYS.region,
      AWS_ACCESS_KEY_ID: S3_KEYS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_KEYS.secretAccessKey,
    };
    const cold = await coldSearch(
      probe,
      {
        engine: "lancedb",
        location: { uri: `s3://${BUCKET_NAME}/search`, s3 },
        workspaceId: ready.workspaceId,
        queries: [queries[0] ?? ""],
        rounds: 0,
        excludeSourceIds: [],
        changedQueries: [],
      },
      { ...process.env, ...engineEnv },
    );
    const coldTally = await counted();

    log(`ingestion: ${label(chunks)}: ${WRITES} writes of ${WRITE_CHUNKS} chunks`);
    const writeBytes = Math.round((SOURCE_BYTES * WRITE_CHUNKS) / perSource);
    const writes: S3Tally[] = [];
    for (let i = 0; i < WRITES; i++) {
      await post(ready, sourceText(SEED + 1, i, writeBytes), `Write ${i}`);
      await allIndexed(ready, sources + i + 1);
      writes.push(await counted());
    }

    log(`ingestion: ${label(chunks)}: floor (chunking + one bulk build)`);
    const floorWorkspace = "ws_ingestion_floor";
    const floor = await runFloor(
      {
        location: { uri: `s3://${BUCKET_NAME}/search`, s3 },
        workspaceId: floorWorkspace,
        seed: SEED,
        sources,
        sourceBytes: SOURCE_BYTES,
        chunking: ready.chunking,
      },
      engineEnv,
    );
    const floorTally = await counted();
    return {
      chunks,
      actualChunks: listed.reduce((n, s) => n + s.chunk_count, 0),
      sources,
      rawBytes: sources * SOURCE_BYTES,
      postedMs,
      importMs,
      peakBytes: Math.max(peakBytes, finalBytes),
      finalBytes,
      runtimePeakMb,
      importAll: totals(importTally),
      importIndex: totals(importTally, INDEX_AREA),
      warmAll: totals(warmTally),
      coldAll: totals(coldTally),
      coldFirstMs: cold.firstMs,
      warmMs,
      writesIndex: writes.map((tally) => requestCount(totals(tally, INDEX_AREA))),
      writesAll: writes.map((tally) => requestCount(totals(tally))),
      floor: {
        chunkMs: floor.chunkMs,
        buildMs: floor.buildMs,
        bytes: await objectFileBytes(workspaceDir(floorWorkspace)),
        peakMb: floor.peakRssMb,
        all: totals(floorTally),
      },
    };
  } finally {
    await runtime?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function tables(levels: Level[]): Table[] {
  const smallest = levels[0];
  const perSource = (n: number, level: Level) => n / level.sources;
  const gb = (level: Level) => level.rawBytes / 1e9;
  const importRows: Row[] = [];
  const floorName = (level: Level) => `${label(level.chunks)}: floor (chunk + one bulk build)`;
  for (const level of levels) {
    importRows.push(
      {
        name: `${label(level.chunks)}: API, to all indexed`,
        floor: floorName(level),
        cells: {
          time: seconds(level.importMs),
          posted: level.postedMs / 1000,
          chunks: level.actualChunks,
          sources: level.sources,
          perThousand: level.importMs / (level.actualChunks / 1000),
        },
      },
      {
        name: floorName(level),
        cells: {
          time: seconds(level.floor.chunkMs + level.floor.buildMs),
          chunk: level.floor.chunkMs / 1000,
          build: level.floor.buildMs / 1000,
          chunks: level.actualChunks,
          sources: level.sources,
          perThousand: (level.floor.chunkMs + level.floor.buildMs) / (level.actualChunks / 1000),
        },
      },
    );
  }
  return [
    {
      caption: "Import: 1 MB text sources posted through the API, until all `indexed`",
      compare: "time",
      columns: [
        { key: "time", label: "time", unit: "s" },
        { key: "posted", label: "all posted", unit: "s" },
        { key: "chunk", label: "chunking", unit: "s" },
        { key: "build", label: "bulk build", unit: "s" },
        { key: "chunks", label: "chunks", digits: 0 },
        { key: "sources", label: "sources", digits: 0 },
        { key: "perThousand", label: "per 1k chunks", unit: "ms", digits: 0 },
      ],
      rows: importRows,
    },
    {
      caption: "Index bytes (objects under the workspace's `search/` prefix) and memory",
      compare: "final",
      columns: [
        { key: "raw", label: "raw text", unit: "MB", digits: 0 },
        { key: "peak", label: "index peak", unit: "MB", digits: 0 },
        { key: "final", label: "index final", unit: "MB", digits: 0 },
        { key: "finalOverRaw", label: "final ÷ raw", digits: 2 },
        { key: "peakOverFinal", label: "peak ÷ final", digits: 2 },
        { key: "floorBytes", label: "bulk-built index", unit: "MB", digits: 0 },
        { key: "rss", label: "runtime RSS peak", unit: "MB", digits: 0 },
        { key: "floorRss", label: "floor process RSS peak", unit: "MB", digits: 0 },
      ],
      rows: levels.map((level) => ({
        name: label(level.chunks),
        cells: {
          raw: mb(level.rawBytes),
          peak: mb(level.peakBytes),
          final: mb(level.finalBytes),
          finalOverRaw: level.finalBytes / level.rawBytes,
          peakOverFinal: level.peakBytes / level.finalBytes,
          floorBytes: mb(level.floor.bytes),
          rss: level.runtimePeakMb,
          floorRss: level.floor.peakMb,
        },
      })),
    },
    {
      caption: "S3 requests, counted by a proxy in front of the S3 emulator",
      compare: "writeIndex",
      columns: [
        { key: "perSource", label: "import, per source", digits: 0 },
        { key: "perSourceIndex", label: "of them index", digits: 0 },
        { key: "writeIndex", label: `${WRITE_CHUNKS}-chunk write, index`, digits: 0 },
        { key: "writeAll", label: `${WRITE_CHUNKS}-chunk write, all`, digits: 0 },
        { key: "writeRatio", label: `write ÷ at ${label(smallest?.chunks ?? 0)}`, digits: 2 },
        { key: "warmReads", label: "warm search, reads", digits: 1 },
        { key: "warm", label: "warm search, all", digits: 1 },
        { key: "warmMs", label: "warm search", unit: "ms", digits: 1 },
        { key: "coldReads", label: "first search (fresh process), reads", digits: 0 },
        { key: "coldMb", label: "first search read", unit: "MB", digits: 1 },
        { key: "coldMs", label: "first search", unit: "ms", digits: 0 },
      ],
      rows: levels.map((level) => ({
        name: label(level.chunks),
        cells: {
          perSource: perSource(requestCount(level.importAll), level),
          perSourceIndex: perSource(requestCount(level.importIndex), level),
          writeIndex: mean(level.writesIndex),
          writeAll: mean(level.writesAll),
          writeRatio: smallest ? mean(level.writesIndex) / mean(smallest.writesIndex) : null,
          warmReads: readCount(level.warmAll) / WARM_SEARCHES,
          warm: requestCount(level.warmAll) / WARM_SEARCHES,
          warmMs: level.warmMs.length > 0 ? summarize(level.warmMs) : null,
          coldReads: readCount(level.coldAll),
          coldMb: mb(
            level.coldAll.get.bytesReceived +
              level.coldAll.rangedGet.bytesReceived +
              level.coldAll.list.bytesReceived,
          ),
          coldMs: level.coldFirstMs,
        },
      })),
    },
    {
      caption: "S3 requests of the import by kind, per source written",
      compare: "put",
      columns: [
        ...S3_REQUEST_KINDS.map((kind) => ({ key: kind, label: kind, digits: 1 })),
        { key: "sent", label: "sent", unit: "MB", digits: 1 },
        { key: "received", label: "received", unit: "MB", digits: 1 },
      ],
      rows: levels.flatMap((level) =>
        (
          [
            [`${label(level.chunks)}: API import`, level.importAll],
            [`${label(level.chunks)}: floor`, level.floor.all],
          ] as const
        ).map(([name, byKind]) => ({
          name,
          cells: {
            ...Object.fromEntries(
              S3_REQUEST_KINDS.map((kind) => [kind, perSource(byKind[kind].requests, level)]),
            ),
            sent: mb(perSource(sum(byKind, "bytesSent"), level)),
            received: mb(perSource(sum(byKind, "bytesReceived"), level)),
          },
        })),
      ),
    },
    {
      caption: "Cost at S3 list prices (us-east-1, S3 Standard), dollars",
      compare: "perGb",
      columns: [
        { key: "warm", label: "per 1,000 warm searches", digits: 5 },
        { key: "cold", label: "per 1,000 first searches", digits: 4 },
        { key: "perGb", label: "requests per GB imported", digits: 3 },
        { key: "floorPerGb", label: "floor's requests per GB", digits: 3 },
        { key: "storage", label: "storage per GB imported, a month", digits: 4 },
      ],
      rows: levels.map((level) => ({
        name: label(level.chunks),
        cells: {
          warm: (requestCost(level.warmAll) / WARM_SEARCHES) * 1000,
          cold: requestCost(level.coldAll) * 1000,
          perGb: requestCost(level.importAll) / gb(level),
          floorPerGb: requestCost(level.floor.all) / gb(level),
          storage: (level.finalBytes / 1e9 / gb(level)) * S3_PRICES.storagePerGbMonth,
        },
      })),
    },
  ];
}

function sum(byKind: ByKind, field: "bytesSent" | "bytesReceived"): number {
  return S3_REQUEST_KINDS.reduce((n, kind) => n + byKind[kind][field], 0);
}

/** This run's tables with the previous design's rows of the same tables after them. */
async function withPrevious(current: Table[]): Promise<{ tables: Table[]; note: string }> {
  if (!existsSync(PREVIOUS)) {
    return { tables: current, note: `No previous design's rows: ${PREVIOUS} is absent.` };
  }
  const report = JSON.parse(await readFile(PREVIOUS, "utf8")) as Report;
  const previous = report.figures.find((f) => f.id === "ingestion");
  const renamed = (name: string) =>
    name.startsWith(PREVIOUS_PREFIX) ? name : `${PREVIOUS_PREFIX}${name}`;
  return {
    tables: current.map((table) => {
      const theirs = previous?.tables.find((t) => t.caption === table.caption);
      const rows = (theirs?.rows ?? []).map(({ name, floor, cells }) => ({
        name: renamed(name),
        ...(floor ? { floor: renamed(floor) } : {}),
        cells,
      }));
      return { ...table, rows: [...table.rows, ...rows] };
    }),
    note:
      `Rows named \`${PREVIOUS_PREFIX}…\` were measured on ${report.startedAt} on the ` +
      "previous design (the recent table folded into the chunks table every 2,000 chunks), " +
      "read from `bench/baselines/ingestion-previous.json` (measured 2026-11-27 on the commit before).",
  };
}

export const figure: Figure = {
  number: 15,
  id: "ingestion",
  title: "Ingestion at scale: a knowledge base imported through the API",
  description:
    "A fresh local runtime (`startLocal`, in a process of its own, the search index in the " +
    "bucket of the S3 emulator as on AWS, a request-counting proxy between the service and the " +
    "emulator) takes 1 MB text sources (deterministic prose, `bench/core/corpus.ts`) posted " +
    "through `POST /api/knowledge` one after the other as fast as it answers, until 10k and " +
    "100k chunks (and 1M with `BENCH_INGESTION_MAX_CHUNKS=1000000`); the time runs until " +
    "`GET /api/knowledge`, polled every second, shows every source `indexed`. Floor, in the " +
    "same run: every text chunked with the project's chunker, and one bulk build of the " +
    "engine's index over those rows (written with maintenance deferred, then one optimize), " +
    "on the same emulator behind the same proxy, in a fresh process.",
  async run(ctx) {
    const levels = ctx.quick ? QUICK_LEVELS : LEVELS;
    const probe = await buildSearchProbe(ctx.outDir);
    const corpus = new Corpus(51);
    const queries = Array.from({ length: 1 + WARM_SEARCHES + WARM_TIMED }, () => corpus.query());
    const measured: Level[] = [];
    for (const chunks of levels) {
      measured.push(await measureLevel(ctx.log, probe, chunks, queries));
    }
    const { tables: all, note } = await withPrevious(tables(measured));
    return {
      tables: all,
      notes: [
        note,
        "Index bytes: the objects under the workspace's `search/<id>/` prefix, read from the " +
          "emulator's folder every second during the import (peak) and once all are indexed " +
          "(final). `bulk-built index` is the floor's index of the same rows.",
        "`runtime RSS peak` is the kernel's high-water mark of the runtime's process: the API " +
          "functions, the index worker (locally in the same process, two deliveries at once) " +
          "and the DynamoDB, S3 and SQS emulators.",
        "S3 requests: `index` counts the requests under `search/`, `all` adds the service's own " +
          "objects (texts, chunk sets). Reads are GETs (whole or ranged) and HEADs. A warm " +
          `search is the mean of ${WARM_SEARCHES} searches through \`POST /api/knowledge/search\` ` +
          "after one that opened the workspace, and `warm search (ms)` the median (p95) of " +
          `${WARM_TIMED} more, other queries, timed at the client; the first search runs in a fresh process ` +
          "(figure 14's probe) that opens the workspace and answers one query. The " +
          `${WRITE_CHUNKS}-chunk write is a text source posted once the import is indexed, ` +
          `counted until it is indexed, the mean of ${WRITES} (a cycle of the recent table, its seal ` +
          "included); `write ÷` is its index " +
          "requests over those at the smallest size (issue 27 bounds it at 1.5×).",
        `Prices: PUT, COPY, POST and LIST $${S3_PRICES.writeTierPerThousand} per 1,000; GET ` +
          `and HEAD $${S3_PRICES.readTierPerThousand} per 1,000; DELETE free; storage ` +
          `$${S3_PRICES.storagePerGbMonth} per GB-month (S3 Standard, us-east-1 list prices). ` +
          "A GB imported is 1,000 sources of 1 MB.",
      ],
    };
  },
};
