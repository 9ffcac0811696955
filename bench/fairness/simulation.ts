import { Agent, createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { queueWorkers } from "../../functions/manifest.js";
import { ensureTable, startDynamo } from "../../infra/local/emulators.js";
import { LocalQueues, recursiveLoopOf, type SqsHandler } from "../../infra/local/queues.js";
import { limiter, mapLimit } from "../../lib/async.js";
import { CHECK_CAPACITY, sweepDelaySeconds } from "../../lib/competitors/capacity.js";
import type { Checker } from "../../lib/competitors/check.js";
import { CheckSlots } from "../../lib/competitors/check-slots.js";
import { COMPETITOR_INDEX, type Competitors } from "../../lib/competitors/competitors.js";
import { enqueueWorkspace, runQueuedCheck, sweepAll } from "../../lib/competitors/sweep.js";
import { workerFairShare } from "../../lib/compose/fair-share.js";
import type { Config } from "../../lib/config.js";
import { inFairShare } from "../../lib/limits/fair-share.js";
import { WORKER_SHARES } from "../../lib/limits/worker-shares.js";
import {
  CheckMessage,
  IndexMessage,
  Queue,
  type QueueRecord,
  recordHandler,
} from "../../lib/store/queue.js";
import { Table } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";

/**
 * The fairness simulation (bench figure 26, test/bench/fairness.test.ts): a night's sweep of
 * `tenants` × `competitors` checks, and each tenant's sources being indexed meanwhile, run through
 * the service's own scheduling — the sweep (`sweepAll`, the capacity model's spread and its
 * rounds past SQS's 900 s delay), the local SQS endpoint and driver as fair queues, the workers'
 * slots in DynamoDB (`runQueuedCheck`, `inFairShare`), the manifest's batch sizes and
 * concurrency — with only the work itself replaced: a check or an indexing is one request to a
 * fixture site on 127.0.0.1 through the safe fetcher, answering after a latency drawn from the
 * model's distribution. Time runs `scale` times faster than real time: the queues' delays and
 * time limits, the latencies and the clock the sweep and the slots read are all scaled, and
 * every time reported is scaled back.
 *
 * The hostile tenants: one whose 20 competitors' sites accept connections and never answer (each
 * check lasts its bound), and one importing `importSources` sources at once.
 */

export interface SimulationOptions {
  tenants: number;
  competitors: number;
  /** Seconds of the service per second of the simulation. */
  scale: number;
  hostile: boolean;
  /** Sources the importing tenant adds at once. */
  importSources: number;
  /** The sweep's spread, in seconds of the service: the capacity model's unless a test shortens it. */
  spreadSeconds?: number;
  log?: (message: string) => void;
}

/** Per tenant: waits, in seconds of the service, from when work was due to when it started. */
export interface TenantWaits {
  checks: number[];
  index: number[];
  /** The most of its checks, and of its sources, that ran at once. */
  mostChecks: number;
  mostIndexing: number;
}

export interface SimulationResult {
  /** From the sweep's start to its last check's end, in seconds of the service. */
  sweepSeconds: number;
  /** How long the sweep function took to queue its checks, in seconds of the service. */
  enqueueSeconds: number;
  checks: number;
  givenUp: number;
  deferred: number;
  /**
   * Messages that failed every delivery (a worker's time limit passed on a machine too busy for
   * the scale): their work is counted as ended, and the run says how many.
   */
  deadLetters: number;
  waits: Map<string, TenantWaits>;
  hanging: string;
  importer: string;
  /** Wall time of the run, real seconds. */
  wallSeconds: number;
}

/** A check's bound (reading budget, briefs, storage), and its reading budget (CHECK_BUDGET_MS). */
const CHECK_BOUND_MS = 60_000;
const CHECK_BUDGET_MS = 45_000;
/**
 * Indexing one source: a few seconds (bench figure 3); a page's fetch ends at 20 s, so 30 s is
 * the longest, well inside the worker's 120 s.
 */
const INDEX_P50_MS = 5_000;
const INDEX_LONGEST_MS = 30_000;

/** A deterministic uniform draw in [0, 1) from a string. */
function uniform(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return (h >>> 0) / 2 ** 32;
}

/** A log-normal latency with this median and p95 = 3 × median, drawn from a string. */
function latencyMs(p50: number, key: string): number {
  const u = Math.min(1 - 1e-9, Math.max(1e-9, uniform(key)));
  // A standard normal draw from two uniform ones (Box–Muller).
  const v = Math.max(1e-9, uniform(`${key}#2`));
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return p50 * Math.exp(z * (Math.log(3) / 1.645));
}

/** A site answering `/?ms=N` after N ms, and one that accepts connections and never answers. */
async function startSites() {
  const listen = async (server: Server) => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const healthy = createServer((req, res) => {
    const ms = Number(new URL(req.url ?? "/", "http://x").searchParams.get("ms")) || 0;
    setTimeout(() => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body><h1>Pricing</h1></body></html>");
    }, ms);
  });
  const hanging = createServer(() => undefined);
  const origins = { healthy: await listen(healthy), hanging: await listen(hanging) };
  return {
    origins,
    async close() {
      for (const server of [healthy, hanging]) server.closeAllConnections();
      await Promise.all(
        [healthy, hanging].map((s) => new Promise((resolve) => s.close(() => resolve(null)))),
      );
    },
  };
}

const tenantId = (i: number) => `ws_sim${String(i).padStart(4, "0")}`;
const competitorId = (tenant: string, j: number) => `cmp_${tenant.slice(3)}x${j}`;

/** One worker of the manifest, fed by the local queues with its batch size and concurrency. */
function consume(queues: LocalQueues, name: string, handler: SqsHandler) {
  const worker = queueWorkers.find((w) => w.name === name);
  if (!worker) throw new Error(`no worker ${name}`);
  queues.consume(worker.queue, handler, {
    batchSize: worker.batchSize,
    // As wide as on AWS: the event source's maximum concurrency.
    concurrency: worker.maxConcurrency,
    timeoutMs: worker.timeoutSeconds * 1000,
    functionName: worker.name,
    recursiveLoop: recursiveLoopOf(worker),
  });
}

/** A worker's invocation: its records at once, each failing alone, as the functions' handlers. */
const batchHandler =
  (handle: (record: QueueRecord) => Promise<void>): SqsHandler =>
  (event) =>
    processPartialResponse(event, handle, new BatchProcessor(EventType.SQS));

export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const { scale, tenants, competitors } = options;
  const log = options.log ?? (() => undefined);
  const wallStarted = performance.now();
  const credentials = { accessKeyId: "x", secretAccessKey: "x" };
  const region = "us-east-1";
  const dynamo = await startDynamo();
  const queues = new LocalQueues({ maxReceiveCount: 5, retryDelayMs: 1000, timeScale: scale });
  const sqsEndpoint = await queues.start();
  const sites = await startSites();
  // Every function instance of the service shares these two clients here: sockets for all.
  const requestHandler = new NodeHttpHandler({
    httpAgent: new Agent({ keepAlive: true, maxSockets: 512 }),
  });
  const dynamoClient = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region,
    credentials,
    requestHandler,
  });
  await ensureTable(dynamoClient, "sim");
  const table = new Table(DynamoDBDocumentClient.from(dynamoClient), "sim");
  const sqs = new SQSClient({ endpoint: sqsEndpoint, region, credentials, requestHandler });
  const checksQueue = new Queue<CheckMessage>(sqs, queues.create("checks"));
  const indexQueue = new Queue<IndexMessage>(sqs, queues.create("index"));
  const web = new SafeFetcher({ allowPrivate: true });

  // The service's clock, `scale` times faster than this process's.
  const t0 = Date.now();
  const now = () => t0 + (Date.now() - t0) * scale;
  const real = (serviceMs: number) => serviceMs / scale;

  const hanging = tenantId(0);
  const importer = tenantId(1);
  const waits = new Map<string, TenantWaits>();
  const waitsOf = (tenant: string) => {
    let w = waits.get(tenant);
    if (!w) {
      w = { checks: [], index: [], mostChecks: 0, mostIndexing: 0 };
      waits.set(tenant, w);
    }
    return w;
  };
  /** Runs work of a tenant, counting how much of its kind runs at once. */
  const running = new Map<string, number>();
  const tracked = async <R>(
    tenant: string,
    kind: "mostChecks" | "mostIndexing",
    work: () => Promise<R>,
  ) => {
    const key = `${kind}#${tenant}`;
    const now = (running.get(key) ?? 0) + 1;
    running.set(key, now);
    const w = waitsOf(tenant);
    w[kind] = Math.max(w[kind], now);
    try {
      return await work();
    } finally {
      running.set(key, (running.get(key) ?? 1) - 1);
    }
  };

  try {
    // The sweep index: every tenant's competitors, hourly so every one is due in this sweep.
    const entries = Array.from({ length: tenants * competitors }, (_, n) => {
      const tenant = tenantId(Math.floor(n / competitors));
      return { tenant, competitor: competitorId(tenant, n % competitors) };
    });
    await mapLimit(entries, 50, ({ tenant, competitor }) =>
      table.put({
        pk: COMPETITOR_INDEX,
        sk: `${tenant}#${competitor}`,
        workspaceId: tenant,
        competitorId: competitor,
        cadence: "hourly",
      }),
    );
    log(`seeded ${entries.length} competitors`);

    // When each check was due: the sweep's step for it, or its send if that came later.
    const dueAt = new Map<string, number>();
    let sweepStart = now();
    // The sweep's checks, and the hanging tenant's check-all besides.
    const expected = entries.length + (options.hostile ? competitors : 0);
    const endedKeys = new Set<string>();
    let ended = 0;
    let lastEnd = 0;
    let givenUp = 0;
    let deferred = 0;
    let indexed = 0;
    let allDone: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      allDone = resolve;
    });
    const indexExpected = (options.hostile ? options.importSources : 0) + tenants;
    const dead = () => queues.deadLetters("checks").length + queues.deadLetters("index").length;
    const check = () => {
      if (ended + indexed + dead() >= expected + indexExpected) allDone();
    };
    const watching = setInterval(check, 1000);

    const checker = {
      boundMs: () => CHECK_BOUND_MS,
      check: (workspaceId: string, competitor: string) =>
        tracked(workspaceId, "mostChecks", async () => {
          const key = `${workspaceId}#${competitor}`;
          waitsOf(workspaceId).checks.push((now() - (dueAt.get(key) ?? now())) / 1000);
          const ms = Math.min(CHECK_BUDGET_MS, latencyMs(15_000, key));
          const site =
            options.hostile && workspaceId === hanging
              ? `${sites.origins.hanging}/`
              : `${sites.origins.healthy}/?ms=${Math.round(real(ms))}`;
          // A site that hangs costs its check's bound, and nothing more.
          await web.fetch(site, { timeoutMs: real(CHECK_BUDGET_MS) }).catch(() => undefined);
          return { ok: true, changed: false };
        }),
    } as unknown as Checker;
    const checkDeps = {
      checker,
      competitors: { find: async () => ({}) } as unknown as Competitors,
      slots: new CheckSlots(table, CHECK_CAPACITY.workspaceSlots),
      queue: checksQueue,
      now,
    };
    consume(
      queues,
      "competitor-check-worker",
      batchHandler((record) => {
        // Each invocation runs its batch's checks at once, as the function does.
        const slot = limiter(CHECK_CAPACITY.batchSize);
        return recordHandler(CheckMessage, (message) =>
          slot(async () => {
            const outcome = await runQueuedCheck(checkDeps, message);
            if (outcome === "deferred") deferred++;
            // A delivery timed out on a busy machine may run again: each check counts once.
            const key = `${message.workspaceId}#${message.competitorId}#${message.requestedAt}`;
            if ((outcome === "checked" || outcome === "given up") && !endedKeys.has(key)) {
              endedKeys.add(key);
              if (outcome === "given up") givenUp++;
              ended++;
              lastEnd = Math.max(lastEnd, now());
              check();
            }
            return outcome;
          }),
        )(record);
      }),
    );

    const indexSentAt = new Map<string, number>();
    const indexedKeys = new Set<string>();
    const config = {
      INDEX_WORKSPACE_SLOTS: WORKER_SHARES.index.perWorkspace,
      CRAWL_WORKSPACE_SLOTS: WORKER_SHARES.crawl.perWorkspace,
    } as Config;
    const { share, leaseMs } = workerFairShare(config, table, indexQueue, "index");
    consume(
      queues,
      "index-worker",
      batchHandler(
        recordHandler(IndexMessage, (message) =>
          inFairShare({ ...share, now }, message, leaseMs, () =>
            tracked(message.workspaceId, "mostIndexing", async () => {
              const sent = indexSentAt.get(message.sourceId) ?? now();
              const first = !indexedKeys.has(message.sourceId);
              if (first) waitsOf(message.workspaceId).index.push((now() - sent) / 1000);
              const ms = Math.min(INDEX_LONGEST_MS, latencyMs(INDEX_P50_MS, message.sourceId));
              await web.fetch(`${sites.origins.healthy}/?ms=${Math.round(real(ms))}`);
              if (first && !indexedKeys.has(message.sourceId)) {
                indexedKeys.add(message.sourceId);
                indexed++;
                check();
              }
            }),
          ),
        ),
      ),
    );

    // Each tenant adds one source at a time of its own during the sweep's spread; the importer
    // adds its whole import at once, a minute in.
    const capacity = {
      ...CHECK_CAPACITY,
      spreadSeconds: options.spreadSeconds ?? CHECK_CAPACITY.spreadSeconds,
    };
    const spreadMs = capacity.spreadSeconds * 1000;
    const timers: NodeJS.Timeout[] = [];
    const sendIndex = (messages: IndexMessage[]) => {
      for (const m of messages) indexSentAt.set(m.sourceId, now());
      return indexQueue.sendAll(messages);
    };
    for (let i = 0; i < tenants; i++) {
      const tenant = tenantId(i);
      const at = uniform(`${tenant}#source`) * spreadMs;
      const message: IndexMessage = {
        kind: "index",
        workspaceId: tenant,
        sourceId: `src_${tenant}`,
        revision: 1,
      };
      timers.push(setTimeout(() => void sendIndex([message]), real(at)));
    }
    if (options.hostile) {
      const bulk = Array.from({ length: options.importSources }, (_, n) => ({
        kind: "index" as const,
        workspaceId: importer,
        sourceId: `src_${importer}_${n}`,
        revision: 1,
      }));
      timers.push(setTimeout(() => void sendIndex(bulk), real(60_000)));
      // The tenant whose sites hang asks for all its checks at once too, a minute in.
      const all = Array.from({ length: competitors }, (_, j) => `${competitorId(hanging, j)}all`);
      const checkAll = { ids: async () => all } as unknown as Competitors;
      timers.push(
        setTimeout(() => {
          const sent = now();
          for (const id of all) dueAt.set(`${hanging}#${id}`, sent);
          void enqueueWorkspace(checkAll, checksQueue, hanging);
        }, real(60_000)),
      );
    }

    // The sweep, as the scheduled function runs it, its sends recorded to know when each was due.
    const recording = new (class extends Queue<CheckMessage> {
      override async sendAll(messages: CheckMessage[], delaySeconds: number[] = []) {
        const sent = now();
        messages.forEach((m, i) => {
          const key = `${m.workspaceId}#${m.competitorId}`;
          const intended =
            sweepStart + sweepDelaySeconds(m.workspaceId, m.competitorId, capacity) * 1000;
          dueAt.set(key, Math.max(intended, sent + Math.min(900, delaySeconds[i] ?? 0) * 1000));
        });
        return super.sendAll(messages, delaySeconds);
      }
    })(sqs, checksQueue.url);
    sweepStart = now();
    await sweepAll(table, recording, capacity, async () => true, new Date(), now);
    const enqueueSeconds = (now() - sweepStart) / 1000;
    log(`sweep queued ${expected} checks in ${enqueueSeconds.toFixed(0)} s of the service`);
    // A run that loses work must fail, not hang: twice the sweep's window is far past its end.
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([
      done,
      new Promise((_, reject) => {
        timeout = setTimeout(
          () =>
            reject(new Error(`only ${ended} of ${expected} checks and ${indexed} sources ended`)),
          real(2 * 7200_000) + 60_000,
        );
      }),
    ]).finally(() => {
      clearTimeout(timeout);
      clearInterval(watching);
    });
    for (const timer of timers) clearTimeout(timer);
    return {
      sweepSeconds: (lastEnd - sweepStart) / 1000,
      enqueueSeconds,
      checks: ended,
      givenUp,
      deferred,
      deadLetters: dead(),
      waits,
      hanging,
      importer,
      wallSeconds: (performance.now() - wallStarted) / 1000,
    };
  } finally {
    await queues.close();
    await sites.close();
    await dynamo.close();
  }
}
