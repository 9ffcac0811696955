import { loadConfig } from "../../lib/config.js";
import { LiveSources } from "../../lib/knowledge/retrieval/live-sources.js";
import { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { createSearchIndex } from "../../lib/search/index.js";
import { startBareServer } from "../api/bare-server.js";
import { apiCases, type Case, warmUp } from "../api/cases.js";
import { seedThroughApi } from "../api/seed.js";
import { Corpus } from "../core/corpus.js";
import type { Figure, Row, Table } from "../core/figure.js";
import { LoadClient, type LoadResult } from "../core/load.js";
import { interleave } from "../core/measure.js";
import { summarize } from "../core/stats.js";
import {
  type Measured,
  type StoreCalls,
  storeCalls,
  storeCells,
  storeColumns,
} from "../core/store-calls.js";

/** Sequential in-process calls per round of the `direct` rows. */
const DIRECT_CALLS = 40;

function loadRow(test: Case, results: LoadResult[]): Row {
  const failures = results.reduce((sum, r) => sum + r.failures, 0);
  const firstFailure = results.find((r) => r.firstFailure)?.firstFailure;
  return {
    name: test.name,
    ...(test.floor ? { floor: test.floor } : {}),
    cells: {
      latency: summarize(results.flatMap((r) => r.latencies)),
      throughput: summarize(results.map((r) => r.throughput)),
      failures: firstFailure ? `${failures} (first: HTTP ${firstFailure})` : failures,
    },
  };
}

/** Each case's service call, DIRECT_CALLS times per round, as a row to put beside the case's. */
async function directRows(calls: StoreCalls, cases: Case[], rounds: number) {
  const withCall = cases.flatMap((test) => (test.direct ? [{ test, direct: test.direct }] : []));
  for (const { direct } of withCall) await direct.call(); // warm, as the routes were
  const samples = await interleave(
    rounds,
    Object.fromEntries(
      withCall.map(({ test, direct }) => [
        test.name,
        async () => {
          const measured: Measured[] = [];
          for (let i = 0; i < DIRECT_CALLS; i++) measured.push(await calls.measure(direct.call));
          await test.settle?.();
          return measured;
        },
      ]),
    ),
  );
  return new Map<string, Row>(
    withCall.map(({ test, direct }) => [
      test.name,
      {
        name: `↳ ${direct.label} in process`,
        ...(test.floor ? { floor: test.floor } : {}),
        cells: { ...storeCells(samples[test.name]?.flat() ?? [], "latency"), throughput: null },
      },
    ]),
  );
}

export const figure: Figure = {
  number: 2,
  id: "api",
  title: "API latency and throughput on the local runtime",
  description:
    "The local runtime (`startLocal`: the same function apps behind one `@hono/node-server`, " +
    "emulated DynamoDB, S3 and SQS in the same process) under autocannon from a separate process, " +
    "at 1 and 16 connections. Floor: a bare Hono app on the same adapter answering the same " +
    "method with the same body. Under each route at 1 connection, its service call made in " +
    "process without HTTP, with its store calls counted. Latency is over every request of every " +
    "round; throughput is per round. Service logs are at WARN (`npm run bench` sets it).",
  async run(ctx) {
    const sourceCount = ctx.quick ? 100 : 1000;
    const rounds = ctx.quick ? 1 : 3;
    const seconds = ctx.quick ? 1 : 2;
    const runtime = await ctx.runtime();
    const reads = await ctx.workspace("api reads");
    const writes = await ctx.workspace("api writes");
    ctx.log(`seeding ${sourceCount} sources through the API`);
    const seeded = await seedThroughApi(runtime, reads, sourceCount);

    const stores = await ctx.stores();
    const corpus = new Corpus(22);
    const bare = await startBareServer();
    const cases = apiCases({
      runtime,
      bareUrl: bare.url,
      reads,
      writes,
      sourceCount,
      sources: new Sources(stores),
      retriever: new IndexRetriever({
        index: createSearchIndex(loadConfig(), stores.table),
        live: new LiveSources(stores.table),
      }),
      text: corpus.document(1000),
      query: corpus.query(),
    });
    await warmUp(cases, runtime);
    const client = new LoadClient();
    const tables: Table[] = [];
    try {
      for (const connections of [1, 16]) {
        ctx.log(`load at ${connections} connections: ${cases.length} cases × ${rounds} rounds`);
        const results = await interleave(
          rounds,
          Object.fromEntries(
            cases.map((test) => [
              test.name,
              async () => {
                const result = await client.run({ ...test.job, connections, seconds });
                await test.settle?.();
                return result;
              },
            ]),
          ),
        );
        // Calls made one at a time compare with the 1-connection rows only.
        const direct =
          connections === 1
            ? await directRows(storeCalls(stores), cases, rounds)
            : new Map<string, Row>();
        tables.push({
          caption: `${connections} connection${connections > 1 ? "s" : ""}, ${seconds} s per round`,
          compare: "latency",
          columns: [
            { key: "latency", label: "latency", unit: "ms", digits: 2 },
            { key: "throughput", label: "throughput", unit: "req/s", digits: 0 },
            { key: "failures", label: "non-2xx", digits: 0 },
            ...storeColumns,
          ],
          rows: cases.flatMap((test) => {
            const beside = direct.get(test.name);
            return [loadRow(test, results[test.name] ?? []), ...(beside ? [beside] : [])];
          }),
        });
      }
    } finally {
      client.close();
      await bare.close();
    }
    return {
      tables,
      notes: [
        `Seeding ${sourceCount} text sources of 1.5 KB through \`POST /api/knowledge\` and indexing them took ${seeded.toFixed(1)} s.`,
        "Latency's `n` counts requests; throughput's median and p95 are over rounds.",
        "`POST /api/knowledge` rounds wait, untimed, for the indexing they queued, so the worker's " +
          "load does not spill into the next case; during the round it runs in the same process, " +
          "as it does on `npm start`.",
      ],
    };
  },
};
