import { loadConfig, MAX_RECEIVE_COUNT } from "../../lib/config.js";
import { type ChunkingOptions, chunkText } from "../../lib/knowledge/indexing/chunking.js";
import { Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { createSearchIndex } from "../../lib/search/index.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { Corpus } from "../core/corpus.js";
import type { BenchContext, Figure, Row, Workspace } from "../core/figure.js";
import { interleave, timeSync } from "../core/measure.js";
import { summarize } from "../core/stats.js";
import { type Measured, storeCalls, storeCells, storeColumns } from "../core/store-calls.js";

interface Run {
  ms: number;
  chunks: number;
  /** Until `POST /api/knowledge` answered (the pipeline only). */
  acceptedMs?: number;
  /** The store calls made (the in-process run only). */
  measured?: Measured;
}

const SIZES = [
  { label: "10 KB", bytes: 10_000, rounds: 10 },
  { label: "100 KB", bytes: 100_000, rounds: 8 },
  { label: "1 MB", bytes: 1_000_000, rounds: 5 },
];

/**
 * One text source through the real path: `POST /api/knowledge` (content to S3, record to
 * DynamoDB, message to the local SQS endpoint), the queue driver delivering it to the index
 * worker, until the queues are idle; then the record must say `indexed`.
 */
async function throughPipeline(
  ctx: BenchContext,
  workspace: Workspace,
  text: string,
): Promise<Run> {
  const runtime = await ctx.runtime();
  const headers = { authorization: `Bearer ${workspace.key}` };
  const started = performance.now();
  const response = await fetch(`${runtime.url}/api/knowledge`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ text, name: "Indexing bench" }),
  });
  const acceptedMs = performance.now() - started;
  if (!response.ok) throw new Error(`POST /api/knowledge answered ${response.status}`);
  const { id } = (await response.json()) as { id: string };
  await runtime.queues.idle();
  const ms = performance.now() - started;
  const source = (await (
    await fetch(`${runtime.url}/api/knowledge/${id}`, { headers })
  ).json()) as {
    status: string;
    chunk_count: number;
  };
  if (source.status !== "indexed") throw new Error(`source ${id} ended ${source.status}`);
  return { ms, acceptedMs, chunks: source.chunk_count };
}

/**
 * The same two service calls without HTTP or the queue driver: `Sources.createText` (its message
 * parked) and `Indexer.handle` on that message, wired as `functions/index-worker.ts` wires it,
 * with every store call counted and timed.
 */
async function inProcess(ctx: BenchContext, workspace: Workspace, chunking: ChunkingOptions) {
  const stores = await ctx.stores();
  const parked = await ctx.parkedQueue("bench-indexing");
  const sources = new Sources({ ...stores, indexQueue: parked.queue });
  const indexer = new Indexer({
    ...stores,
    search: createSearchIndex(loadConfig(), stores.table),
    chunking,
    loaders: { text: textLoader(stores.blobs) },
  });
  const calls = storeCalls(stores);
  return async (text: string): Promise<Run> => {
    let id = "";
    const measured = await calls.measure(async () => {
      id = (await sources.createText(workspace.workspaceId, text, "Indexing bench")).id;
      const message = JSON.parse(parked.messages().at(-1) ?? "{}") as IndexMessage;
      const delivery = { receiveCount: 1, maxReceiveCount: MAX_RECEIVE_COUNT };
      const outcome = await indexer.handle(message, delivery);
      if (outcome !== "indexed") throw new Error(`source ${id} was ${outcome}`);
    });
    const { chunk_count: chunks } = await sources.get(workspace.workspaceId, id);
    return { ms: measured.ms, chunks, measured };
  };
}

function row(name: string, bytes: number, runs: Run[], floor?: string): Row {
  const time = summarize(runs.map((r) => r.ms));
  const accepted = runs.flatMap((r) => (r.acceptedMs === undefined ? [] : [r.acceptedMs]));
  const measured = runs.flatMap((r) => (r.measured ? [r.measured] : []));
  return {
    name,
    ...(floor ? { floor } : {}),
    cells: {
      time,
      accepted: accepted.length > 0 ? summarize(accepted) : null,
      ...(measured.length > 0 ? storeCells(measured) : { store: null, calls: null }),
      throughput: bytes / 1e6 / (time.median / 1000),
      chunks: runs[0]?.chunks ?? null,
    },
  };
}

export const figure: Figure = {
  number: 3,
  id: "indexing",
  title: "Indexing throughput",
  description:
    "A text source of each size from `POST /api/knowledge` until it is `indexed`, through the " +
    "local runtime's real queue driver and index worker (S3 and DynamoDB emulated in process). " +
    "Floor: `chunkText` alone on the same text with the same options, timed in the same round. " +
    "Between them, the same service calls made in process (no HTTP, no queue driver), with the " +
    "store calls they make counted and timed, to show where the rest goes.",
  async run(ctx) {
    const workspace = await ctx.workspace("indexing");
    const { CHUNK_SIZE: size, CHUNK_OVERLAP: overlap } = loadConfig();
    const direct = await inProcess(ctx, workspace, { size, overlap });
    const corpus = new Corpus(31);
    const rows: Row[] = [];
    for (const { label, bytes, rounds } of SIZES) {
      const count = ctx.quick ? 1 : rounds;
      ctx.log(`indexing ${label} × ${count}`);
      const texts = Array.from({ length: count }, () => corpus.document(bytes));
      const text = (round: number) => texts[round] as string;
      const runs = await interleave(count, {
        pipeline: (round) => throughPipeline(ctx, workspace, text(round)),
        direct: (round) => direct(text(round)),
        chunking: (round) => {
          let chunks = 0;
          const ms = timeSync(() => {
            chunks = chunkText(text(round), { size, overlap }).length;
          });
          return { ms, chunks };
        },
      });
      const floor = `${label}: chunkText alone`;
      rows.push(
        row(`${label}: POST → indexed`, bytes, runs.pipeline, floor),
        row(`${label}: same calls in process`, bytes, runs.direct, floor),
        row(floor, bytes, runs.chunking),
      );
    }
    return {
      tables: [
        {
          caption: `Enqueue to indexed (chunks of ${size} characters, ${overlap} of overlap)`,
          compare: "time",
          columns: [
            { key: "time", label: "time", unit: "ms" },
            { key: "accepted", label: "POST answered", unit: "ms" },
            ...storeColumns,
            { key: "throughput", label: "throughput", unit: "MB/s", digits: 2 },
            { key: "chunks", label: "chunks", digits: 0 },
          ],
          rows,
        },
      ],
    };
  },
};
