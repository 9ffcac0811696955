import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import MiniSearch from "minisearch";
import { ensureTable, startDynamo } from "../../infra/local/emulators.js";
import { engine, storageOptions } from "../../lib/search/engine.js";
import { sqlString } from "../../lib/search/filters.js";
import {
  DynamoWriterLock,
  SearchIndex,
  type SearchLocation,
  type SourceDocument,
} from "../../lib/search/index.js";
import {
  CHUNKS_FAMILY,
  chunkRows,
  recentTable,
  vectorRows,
  vectorsFamily,
} from "../../lib/search/rows.js";
import { Table } from "../../lib/store/table.js";
import { Corpus, prng } from "../core/corpus.js";
import type { BenchContext, Figure, Table as ReportTable, Row } from "../core/figure.js";
import { interleave, time, timeSync } from "../core/measure.js";
import { objectBytes, removeObjects } from "../core/s3-objects.js";
import { type Summary, summarize } from "../core/stats.js";
import { batches, randomVector, source, sourceId, type Vectors } from "../search-engine/corpus.js";
import { MINISEARCH_OPTIONS, type SnapshotChunk } from "../search-engine/minisearch.js";
import type { ProbeTask } from "../search-engine/protocol.js";
import { buildSearchProbe, type ColdSearch, coldSearch } from "../search-engine/spawn.js";

/**
 * 10k and 100k by default: with them the figure takes about 10 minutes on the 2-core machine.
 * `BENCH_SEARCH_MAX_CHUNKS=1000000` adds a million chunks (lexical, on disk and on the S3
 * emulator), another ~20.
 */
const LEVELS = [10_000, 100_000, 1_000_000].filter(
  (chunks) => chunks <= Number(process.env.BENCH_SEARCH_MAX_CHUNKS ?? 100_000),
);
const QUICK_LEVELS = [2_000, 10_000];
const HYBRID_MAX = 100_000;
/** A million chunks' snapshot would be one JSON string of about 2 GB, past what V8 allows. */
const SNAPSHOT_MAX = 100_000;
const VECTORS: Vectors = { space: "bench256", dimensions: 256 };
const QUERIES = 20;
/** Sources left out of the filtered warm series. */
const EXCLUDED = 10;
const BUCKET = "bench-search";
const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
const region = "us-east-1";

const label = (chunks: number) => `${chunks.toLocaleString("en-US")} chunks`;
const one = (ms: number): Summary => summarize([ms]);
const mb = (bytes: number) => bytes / 2 ** 20;

/** Bytes under a directory. */
async function du(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

type SnapshotLocation = Extract<ProbeTask, { engine: "minisearch" }>["snapshot"];

/** A store the engine and the snapshot are measured on. */
interface Store {
  name: string;
  location: SearchLocation;
  /** The bytes the store keeps for a workspace, for the size column. */
  bytes: (workspaceId: string) => Promise<number>;
  /** Writes the snapshot and answers where the probe finds it. */
  putSnapshot(name: string, json: string): Promise<SnapshotLocation>;
}

const vectorsAt = (chunks: number) => (chunks <= HYBRID_MAX ? VECTORS : undefined);

/** Writes a level into a workspace batch by batch, maintenance deferred, then optimizes once. */
async function build(index: SearchIndex, workspaceId: string, chunks: number): Promise<number> {
  let ms = 0;
  for (const batch of batches(chunks, vectorsAt(chunks))) {
    ms += await time(() => index.replaceSources(workspaceId, batch, { maintain: false }));
  }
  return ms + (await time(() => index.optimize(workspaceId)));
}

const snapshotDocs = (document: SourceDocument): SnapshotChunk[] =>
  document.chunks.map((chunk) => ({
    id: `${document.source.id}#${chunk.chunkIndex}`,
    text: chunk.text,
    heading: chunk.heading,
  }));

/** The level's chunks in a MiniSearch index, and the time spent indexing them. */
function miniSearchOf(chunks: number): { index: MiniSearch<SnapshotChunk>; ms: number } {
  const index = new MiniSearch<SnapshotChunk>(MINISEARCH_OPTIONS);
  let ms = 0;
  for (const batch of batches(chunks)) {
    const docs = batch.flatMap(snapshotDocs);
    ms += timeSync(() => index.addAll(docs));
  }
  return { index, ms };
}

interface Rows {
  build: Row[];
  write: Row[];
  cold: Row[];
  warm: Row[];
}

/** The LanceDB and snapshot rows of one level. */
async function measureLevel(
  ctx: BenchContext,
  stores: Store[],
  lock: DynamoWriterLock,
  probe: string,
  chunks: number,
  queries: { first: string[]; changed: string[] },
  rows: Rows,
): Promise<void> {
  const workspaceId = `ws_bench_${chunks}`;
  const vectors = vectorsAt(chunks);
  const withSnapshot = chunks <= SNAPSHOT_MAX;
  /** Writes are timed a few times; at 100k each snapshot rewrite alone takes seconds. */
  const rounds = ctx.quick ? 1 : chunks < 100_000 ? 3 : 2;
  const snapshotRow = (store: Store) => `${label(chunks)}: MiniSearch snapshot, ${store.name}`;
  const floor = (store: Store) => (withSnapshot ? { floor: snapshotRow(store) } : {});
  const random = prng(chunks + 7);
  const queryVector = Array.from(randomVector(random, VECTORS.dimensions));
  const excluded = Array.from({ length: EXCLUDED }, (_, i) => sourceId(chunks, i * 7));
  const { lance } = await engine();

  let snapshot: { json: string; index: MiniSearch<SnapshotChunk> } | undefined;
  const snapshotAt = new Map<Store, SnapshotLocation>();
  if (withSnapshot) {
    ctx.log(`search-engine: MiniSearch snapshot of ${label(chunks)}`);
    const { index, ms } = miniSearchOf(chunks);
    let json = "";
    const serializeMs = timeSync(() => {
      json = JSON.stringify(index);
    });
    snapshot = { json, index };
    for (const store of stores) {
      const putMs = await time(async () => {
        snapshotAt.set(store, await store.putSnapshot(`snapshot-${chunks}.json`, json));
      });
      rows.build.push({
        name: snapshotRow(store),
        cells: {
          time: one(ms + serializeMs + putMs),
          perThousand: (ms + serializeMs + putMs) / (chunks / 1000),
          size: mb(Buffer.byteLength(json)),
        },
      });
    }
  }

  for (const store of stores) {
    const name = `${label(chunks)}: LanceDB, ${store.name}`;
    const writer = new SearchIndex({ location: store.location, lock });
    ctx.log(`search-engine: building ${name}`);
    const ms = await build(writer, workspaceId, chunks);
    rows.build.push({
      name,
      ...floor(store),
      cells: {
        time: one(ms),
        perThousand: ms / (chunks / 1000),
        size: mb(await store.bytes(workspaceId)),
      },
    });

    // One source of 100 chunks rewritten: through the index (one merge commit per table, under
    // the writer lock, maintenance by policy), and by hand as the engine's alternative without a
    // merge, also under the lock: a delete and an add per table (two commits, and a moment with
    // the source missing).
    const corpus = new Corpus(chunks + 1);
    const db = await lance.connect(`${store.location.uri}/${workspaceId}`, {
      ...(store.location.s3 ? { storageOptions: storageOptions(store.location.s3) } : {}),
    });
    const tables = await Promise.all(
      [CHUNKS_FAMILY, ...(vectors ? [vectorsFamily(vectors.space)] : [])].map((family) =>
        db.openTable(recentTable(family)),
      ),
    );
    const rewritten = (i: number) => source(corpus, random, sourceId(chunks, i), i, vectors);
    const deleteAdd = `${label(chunks)}: delete + add, ${store.name}`;
    const writes = await interleave(rounds, {
      merge: () => {
        const document = rewritten(1);
        return time(() => writer.replaceSource(workspaceId, document));
      },
      mergeOnly: () => {
        const document = rewritten(4);
        return time(() => writer.replaceSources(workspaceId, [document], { maintain: false }));
      },
      deleteAdd: () => {
        const document = rewritten(2);
        const fresh = [chunkRows(document), vectorRows(document)];
        return time(() =>
          lock.withLock(workspaceId, async () => {
            for (const [t, table] of tables.entries()) {
              await table.checkoutLatest();
              await table.delete(`source_id = ${sqlString(document.source.id)}`);
              await table.add((fresh[t] ?? []).map((row) => ({ ...row })));
            }
          }),
        );
      },
    });
    rows.write.push(
      {
        name: `${label(chunks)}: replaceSource (merge, then maintenance), ${store.name}`,
        floor: deleteAdd,
        cells: { time: summarize(writes.merge) },
      },
      {
        name: `${label(chunks)}: replaceSource (merge, maintenance deferred), ${store.name}`,
        floor: deleteAdd,
        cells: { time: summarize(writes.mergeOnly) },
      },
      { name: deleteAdd, cells: { time: summarize(writes.deleteAdd) } },
    );
    for (const table of tables) table.close();
    // The searches below run on a fully indexed workspace, as after any maintenance. This is
    // the fold a write pays once per `foldAfterRows` chunks written (2,000 by default).
    rows.write.push({
      name: `${label(chunks)}: fold (recent chunks into the chunks table), ${store.name}`,
      cells: { time: one(await time(() => writer.optimize(workspaceId))) },
    });

    // Fresh processes, alternating: lexical first, hybrid first, and the snapshot.
    // Each process runs every query once warm: three processes give three rounds.
    const base = { queries: queries.first, rounds: 1 };
    const lancedb = {
      ...base,
      engine: "lancedb" as const,
      location: store.location,
      workspaceId,
      excludeSourceIds: excluded,
      changedQueries: queries.changed,
    };
    const cases: Record<string, () => Promise<ColdSearch>> = {
      lexical: () => coldSearch(probe, lancedb),
    };
    if (vectors) {
      cases.hybrid = () =>
        coldSearch(probe, { ...lancedb, hybrid: { space: vectors.space, vector: queryVector } });
    }
    const where = snapshotAt.get(store);
    if (where) {
      cases.snapshot = () => coldSearch(probe, { ...base, engine: "minisearch", snapshot: where });
    }
    ctx.log(`search-engine: fresh processes searching ${name}`);
    const runs = await interleave(ctx.quick ? 1 : 3, cases);
    const coldRow = (rowName: string, samples: ColdSearch[], isFloor = false): Row => ({
      name: rowName,
      ...(isFloor ? {} : floor(store)),
      cells: {
        wall: summarize(samples.map((s) => s.wallMs)),
        boot: summarize(samples.map((s) => s.bootMs)),
        import: summarize(samples.map((s) => s.importMs)),
        first: summarize(samples.map((s) => s.firstMs)),
        hits: samples[0]?.firstHits ?? null,
      },
    });
    const warmRow = (
      rowName: string,
      samples: ColdSearch[],
      series: keyof ColdSearch,
      isFloor = false,
    ): Row => ({
      name: rowName,
      ...(isFloor ? {} : floor(store)),
      cells: {
        time: summarize(samples.flatMap((s) => s[series] as number[])),
        rss: summarize(samples.map((s) => s.rssMb)),
      },
    });
    rows.cold.push(coldRow(`${name}, lexical`, runs.lexical ?? []));
    rows.warm.push(
      warmRow(`${name}, lexical`, runs.lexical ?? [], "warm"),
      warmRow(`${name}, lexical, ${EXCLUDED} sources excluded`, runs.lexical ?? [], "warmFiltered"),
      warmRow(
        `${name}, lexical, the workspace changed before each search`,
        runs.lexical ?? [],
        "warmChanged",
      ),
    );
    if (runs.hybrid) {
      rows.cold.push(coldRow(`${name}, hybrid`, runs.hybrid));
      rows.warm.push(warmRow(`${name}, hybrid`, runs.hybrid, "warmHybrid"));
    }
    if (runs.snapshot) {
      rows.cold.push(coldRow(snapshotRow(store), runs.snapshot, true));
      rows.warm.push(warmRow(snapshotRow(store), runs.snapshot, "warm", true));
    }
  }

  if (snapshot && stores[0]) {
    // The snapshot's write: one source's chunks replaced in memory, then the whole index
    // serialized and written again, whatever the size of the change.
    const store = stores[0];
    const corpus = new Corpus(chunks + 2);
    const index = snapshot.index;
    const samples = await interleave(rounds, {
      rewrite: () => {
        const document = source(corpus, random, sourceId(chunks, 3), 3);
        return time(async () => {
          for (const chunk of snapshotDocs(document)) index.discard(chunk.id);
          index.addAll(snapshotDocs(document));
          await store.putSnapshot(`snapshot-${chunks}.json`, JSON.stringify(index));
        });
      },
    });
    rows.write.push({
      name: `${label(chunks)}: MiniSearch snapshot rewritten, ${store.name}`,
      floor: `${label(chunks)}: delete + add, ${store.name}`,
      cells: { time: summarize(samples.rewrite) },
    });
  }
}

export const figure: Figure = {
  number: 14,
  id: "search-engine",
  title: "Persisted search engine: LanceDB against a MiniSearch snapshot",
  description:
    "Synthetic knowledge bases of 10k, 100k (and optionally 1M) chunks (sources of 100 chunks of about 850 " +
    "characters, Zipf-distributed words, a heading per 8 chunks, and up to 100k a random unit " +
    `vector of ${VECTORS.dimensions} dimensions per chunk) indexed by \`lib/search\` (LanceDB) ` +
    "on local disk and on the S3 emulator (s3rver), beside the same chunks in a " +
    "MiniSearch index persisted as one JSON snapshot (up to 100k). Cold first search runs in a " +
    "fresh Node process that imports the bundled engine, opens the workspace (or downloads and " +
    `loads the snapshot) and answers; that process then runs each of ${QUERIES} fixed ` +
    "queries of two or three words once warm and reports its resident memory; three such " +
    "processes a row, interleaved. Floor: the MiniSearch " +
    "snapshot of the same chunks on the same store; for writes, the engine's delete + add.",
  async run(ctx) {
    const levels = ctx.quick ? QUICK_LEVELS : LEVELS;
    const root = await mkdtemp(join(tmpdir(), "bench-search-"));
    // The runtime's S3 emulator, not one of the figure's own: see `BenchContext.s3`.
    const [dynamo, s3] = await Promise.all([startDynamo(), ctx.s3()]);
    const dynamoClient = new DynamoDBClient({ endpoint: dynamo.endpoint, region, credentials });
    const s3Client = new S3Client({
      endpoint: s3.endpoint,
      region,
      credentials,
      forcePathStyle: true,
    });
    await s3Client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const stores: Store[] = [
      {
        name: "local disk",
        location: { uri: join(root, "disk") },
        bytes: (workspaceId) => du(join(root, "disk", workspaceId)),
        async putSnapshot(name, json) {
          const file = join(root, name);
          await writeFile(file, json);
          return { file };
        },
      },
      {
        name: "S3 emulator",
        location: {
          uri: `s3://${BUCKET}/search`,
          s3,
        },
        bytes: (workspaceId) => objectBytes(s3Client, BUCKET, `search/${workspaceId}/`),
        async putSnapshot(name, json) {
          await s3Client.send(new PutObjectCommand({ Bucket: BUCKET, Key: name, Body: json }));
          return { endpoint: s3.endpoint, bucket: BUCKET, key: name };
        },
      },
    ];
    const rows: Rows = { build: [], write: [], cold: [], warm: [] };
    try {
      await ensureTable(dynamoClient, "bench-search");
      const lock = new DynamoWriterLock(
        new Table(DynamoDBDocumentClient.from(dynamoClient), "bench-search"),
      );
      const probe = await buildSearchProbe(ctx.outDir);
      const corpus = new Corpus(51);
      const distinct = new Set<string>();
      while (distinct.size < 2 * QUERIES) distinct.add(corpus.query());
      const all = [...distinct];
      const queries = { first: all.slice(0, QUERIES), changed: all.slice(QUERIES) };
      for (const chunks of levels) {
        await measureLevel(ctx, stores, lock, probe, chunks, queries, rows);
      }
    } finally {
      dynamoClient.destroy();
      await removeObjects(s3Client, BUCKET, "");
      s3Client.destroy();
      await dynamo.close();
      await rm(root, { recursive: true, force: true });
    }
    const tables: ReportTable[] = [
      {
        caption: "Index build (chunks, vectors up to 100k, indexes; maintenance once at the end)",
        compare: "time",
        columns: [
          { key: "time", label: "time", unit: "ms", digits: 0 },
          { key: "perThousand", label: "per 1k chunks", unit: "ms", digits: 0 },
          { key: "size", label: "size", unit: "MB" },
        ],
        rows: rows.build,
      },
      {
        caption: "Rewriting one source of 100 chunks in the workspace",
        compare: "time",
        columns: [{ key: "time", label: "time", unit: "ms" }],
        rows: rows.write,
      },
      {
        caption: "Cold first search in a fresh process",
        compare: "wall",
        columns: [
          { key: "wall", label: "spawn → first answer", unit: "ms" },
          { key: "boot", label: "Node boot", unit: "ms" },
          { key: "import", label: "engine import", unit: "ms" },
          { key: "first", label: "open + first search", unit: "ms" },
          { key: "hits", label: "hits", digits: 0 },
        ],
        rows: rows.cold,
      },
      {
        caption: `Warm search in those processes, ${QUERIES} queries each`,
        compare: "time",
        columns: [
          { key: "time", label: "time", unit: "ms" },
          { key: "rss", label: "process RSS", unit: "MB", digits: 0 },
        ],
        rows: rows.warm,
      },
    ];
    return {
      tables,
      notes: [
        "Writes: `maintenance` is `lib/search`'s policy after a write: the source's chunks go " +
          "to the small recent table, optimized at once, and leave the chunks table by a delete; " +
          "once the recent table holds 2,000 chunks a write also pays the `fold` row (see " +
          "`foldAfterRows`). `deferred` is the merge commits alone, as a bulk load writes before " +
          "its one optimize.",
        "Hybrid rows search with a random query vector and exclude the embedding call: they time " +
          "the engine's lexical and vector searches, the fusion and the text of vector-only hits.",
        `Filtered rows exclude ${EXCLUDED} sources with \`excludeSourceIds\`, applied by the ` +
          "engine before ranking; they repeat the first warm series' queries, whose words the " +
          "engine has read once already.",
        "Searches run as the functions run them: each brings the workspace's generation (the " +
          "counter its sources' changes move), and only a higher one than the process saw last " +
          "makes the search first ask the store for the index's newest version (a listing). " +
          "The `workspace changed` rows bring a higher one every time, as searches right after " +
          "each source indexed would; the others, none, as between changes.",
        "`engine import` is `lib/search` with LanceDB's native module, Apache Arrow and the " +
          "DynamoDB client its writer lock uses, or MiniSearch (and, for S3, the AWS SDK's S3 " +
          "client). `Node boot` is the process start and the probe's own code, which loads " +
          "neither. `open + first search` includes opening the workspace's tables, or " +
          "downloading and parsing the snapshot.",
        "Sizes: on disk the bytes of the workspace's files; on the S3 emulator (the local " +
          "runtime's, shared with the other figures) the sum of its objects' sizes, as S3 bills them.",
        "LanceDB runs with `LANCE_CPU_THREADS=4` (`lib/search/engine.ts`): with the default on " +
          "this 2-core machine its full-text index build hangs at about 100k rows.",
        "1M chunks (only with `BENCH_SEARCH_MAX_CHUNKS=1000000`): lexical only, as vectors at " +
          "that size would take most of the run, and no snapshot, which would be one JSON " +
          "string past V8's limit.",
      ],
    };
  },
};
