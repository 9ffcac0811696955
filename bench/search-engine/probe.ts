import { writeSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { FIRST_ANSWERED, type ProbeAnswer, type ProbeTask } from "./protocol.js";

/**
 * Runs in a fresh Node process, as a cold Lambda instance does: imports the search engine, answers
 * a first search, then repeats warm searches, and reports on file descriptor 3. Usage:
 * node search-probe.mjs '<ProbeTask as JSON>'. Built by the figure with esbuild (LanceDB,
 * Apache Arrow and the AWS SDK left to node_modules, as a Lambda bundle leaves them).
 */

const task = JSON.parse(process.argv[2] ?? "{}") as ProbeTask;
const bootMs = performance.now();

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

async function warm(
  rounds: number,
  search: (query: string) => Promise<unknown>,
  queries = task.queries,
) {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const query of queries) samples.push((await timed(() => search(query)))[0]);
  }
  return samples;
}

const first = task.queries[0] ?? "";
let answer: Omit<ProbeAnswer, "bootMs" | "rssMb">;
if (task.engine === "lancedb") {
  const [importMs, { SearchIndex }] = await timed(async () => {
    const [{ engine }, search] = await Promise.all([
      import("../../lib/search/engine.js"),
      import("../../lib/search/index.js"),
    ]);
    await engine();
    return search;
  });
  // As the functions search: the default consistency, a generation with each search (the
  // workspace's counter, which only moves when its sources change).
  const index = new SearchIndex({
    location: task.location,
    lock: { withLock: () => Promise.reject(new Error("the probe only searches")) },
  });
  let generation = 1;
  const hybrid = task.hybrid ? { space: task.hybrid.space, vector: task.hybrid.vector } : {};
  const search = (text: string, extra: object = {}) =>
    index.search(task.workspaceId, { text, limit: 10, generation, ...extra });
  const [firstMs, hits] = await timed(() => search(first, hybrid));
  writeSync(3, FIRST_ANSWERED);
  answer = {
    importMs,
    firstMs,
    firstHits: hits.length,
    warm: await warm(task.rounds, (q) => search(q)),
    warmHybrid: task.hybrid ? await warm(task.rounds, (q) => search(q, hybrid)) : [],
    warmFiltered: await warm(task.rounds, (q) =>
      search(q, { filters: { excludeSourceIds: task.excludeSourceIds } }),
    ),
    warmChanged: await warm(
      task.rounds,
      (q) => {
        generation++;
        return search(q);
      },
      task.changedQueries,
    ),
  };
} else {
  const snapshot = task.snapshot;
  const [importMs, modules] = await timed(async () => {
    const [{ default: MiniSearch }, { MINISEARCH_OPTIONS }, s3] = await Promise.all([
      import("minisearch"),
      import("./minisearch.js"),
      "file" in snapshot ? undefined : import("@aws-sdk/client-s3"),
    ]);
    return { MiniSearch, MINISEARCH_OPTIONS, s3 };
  });
  const { MiniSearch, MINISEARCH_OPTIONS, s3 } = modules;
  const load = async () => {
    let json: string;
    if ("file" in snapshot) json = await readFile(snapshot.file, "utf8");
    else {
      if (!s3) throw new Error("no S3 client");
      const client = new s3.S3Client({
        endpoint: snapshot.endpoint,
        region: "us-east-1",
        credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
        forcePathStyle: true,
      });
      const object = await client.send(
        new s3.GetObjectCommand({ Bucket: snapshot.bucket, Key: snapshot.key }),
      );
      json = (await object.Body?.transformToString("utf8")) ?? "";
    }
    return MiniSearch.loadJSON(json, MINISEARCH_OPTIONS);
  };
  const [firstMs, { index, hits }] = await timed(async () => {
    const index = await load();
    return { index, hits: index.search(first).slice(0, 10) };
  });
  writeSync(3, FIRST_ANSWERED);
  answer = {
    importMs,
    firstMs,
    firstHits: hits.length,
    warm: await warm(task.rounds, async (q) => index.search(q).slice(0, 10)),
    warmHybrid: [],
    warmFiltered: [],
    warmChanged: [],
  };
}
const result: ProbeAnswer = { bootMs, ...answer, rssMb: process.memoryUsage().rss / 2 ** 20 };
writeSync(3, JSON.stringify(result));
// The engine's and the SDK's connections would keep the process alive.
process.exit(0);
