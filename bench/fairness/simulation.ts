import { Agent, createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { BatchWriteCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
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
import { loadConfig } from "../../lib/config.js";
import { invocationShare } from "../../lib/limits/fair-share.js";
import {
  CheckMessage,
  IndexMessage,
  Queue,
  type QueueRecord,
  recordHandler,
  WebhookMessage,
} from "../../lib/store/queue.js";
import { Table } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { WEBHOOK_ASSUMPTIONS } from "../../lib/webhooks/capacity.js";
import { WebhookDeliverer, type WebhookPoster } from "../../lib/webhooks/delivery.js";
import { deliveryGate } from "../../lib/webhooks/delivery-gate.js";
import { WebhookEmitter } from "../../lib/webhooks/emitter.js";
import type { EndpointItem, WebhookEndpoints } from "../../lib/webhooks/endpoints.js";
import type { WebhookEventData } from "../../lib/webhooks/events.js";
import { HeldHttpHandler, VirtualClock } from "./clock.js";

/**
 * The fairness simulation (bench figure 26, test/bench/fairness.test.ts): a night's sweep of
 * `tenants` × `competitors` checks, and each tenant's sources being indexed meanwhile, run through
 * the service's own scheduling — the sweep (`sweepAll`, the capacity model's spread and its
 * rounds past SQS's 900 s delay), the local SQS endpoint and driver as fair queues, the workers'
 * slots in DynamoDB (`runQueuedCheck`, `invocationShare`), the webhooks worker's gate (each
 * endpoint's lease and circuit, the workspace's slots: `WebhookDeliverer`, `DeliveryGate`), the
 * manifest's batch sizes and concurrency — with only the work itself replaced: a check, an
 * indexing or a webhook delivery is one request to a fixture site on 127.0.0.1 through the safe
 * fetcher after a latency drawn from the model's distribution, and the competitor and endpoint
 * records the workers read are answered from memory. Each tenant's endpoint receives an event
 * (`WebhookEmitter`) when each of its first `webhookEvents` competitors' checks ends. Time is a
 * virtual clock (`clock.ts`) that the queues' delays, the latencies, the sweep, the slots and the
 * gate all read: it stands still while the emulators and the sites answer, and jumps to the next
 * second something waits for once nothing else is left, so every wait reported is the model's,
 * in seconds of the service, however busy the machine.
 *
 * The hostile tenants: one whose 20 competitors' sites accept connections and never answer (each
 * check lasts its bound), one importing `importSources` sources at once, and one whose webhook
 * endpoint accepts connections and never answers (each attempt lasts its timeout), sent
 * `hungEvents` events at once besides its own.
 */

export interface SimulationOptions {
  tenants: number;
  competitors: number;
  hostile: boolean;
  /** Sources the importing tenant adds at once. */
  importSources: number;
  /** Events each tenant's webhook endpoint receives in the night, one per changed competitor. */
  webhookEvents: number;
  /** Events sent at once to the endpoint that never answers, besides its own. */
  hungEvents: number;
  /** The sweep's spread, in seconds of the service: the capacity model's unless a test shortens it. */
  spreadSeconds?: number;
  log?: (message: string) => void;
}

/** Per tenant: waits, in seconds of the service, from when work was due to when it started. */
export interface TenantWaits {
  checks: number[];
  index: number[];
  /** From an event's emission to its delivery's first attempt. */
  webhooks: number[];
  /** The most of its checks, of its sources, and of its delivery attempts that ran at once. */
  mostChecks: number;
  mostIndexing: number;
  mostDeliveries: number;
}

export interface SimulationResult {
  /** From the sweep's start to its last check's end, in seconds of the service. */
  sweepSeconds: number;
  checks: number;
  givenUp: number;
  deferred: number;
  /** Checks and sources that failed every delivery: counted as ended, and the run says how many. */
  deadLetters: number;
  waits: Map<string, TenantWaits>;
  hanging: string;
  importer: string;
  /** The tenant whose webhook endpoint never answers. */
  hungWebhook: string;
  /** Attempts to deliver to it, and deliveries to every other endpoint. */
  hungAttempts: number;
  delivered: number;
  /** Wall time of the run, real seconds ... */
  wallSeconds: number;
  /** ... and this process's CPU time in it: what the night costs however busy the machine is. */
  cpuSeconds: number;
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
/** Virtual time moves in whole seconds: waits are exact to a second. */
const TICK_MS = 1_000;
/**
 * A request to a site or endpoint that never answers is given up after this many real ms, once
 * its timeout has passed on the virtual clock.
 */
const HANG_PROBE_MS = 50;
/** A receiver answers a webhook in about half a second (the webhook capacity model's p50). */
const WEBHOOK_P50_MS = WEBHOOK_ASSUMPTIONS.p50Seconds * 1000;
/** The competitor event each changed competitor sends its workspace's endpoint. */
const EVENT_TYPE = "competitor.event";

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

/**
 * A site answering at once (the model's latency passes on the virtual clock before each request),
 * and one that accepts connections and never answers.
 */
async function startSites() {
  const listen = async (server: Server) => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const healthy = createServer((req, res) => {
    // A webhook's body is read and dropped, so the connection is kept for the next delivery.
    req.resume();
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<html><body><h1>Pricing</h1></body></html>");
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
const endpointId = (tenant: string) => `wh_${tenant.slice(3)}`;

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
  const { tenants, competitors } = options;
  const log = options.log ?? (() => undefined);
  const wallStarted = performance.now();
  const cpuStarted = process.cpuUsage();
  const credentials = { accessKeyId: "x", secretAccessKey: "x" };
  const region = "us-east-1";
  const clock = new VirtualClock(Date.now(), TICK_MS);
  const now = clock.now;
  const dynamo = await startDynamo();
  const queues = new LocalQueues({ maxReceiveCount: 5, retryDelayMs: 1000, clock: now });
  const sqsEndpoint = await queues.start();
  const sites = await startSites();
  // Every function instance of the service shares these two clients here: sockets for all. Their
  // requests hold the clock: the emulators' time is not the service's.
  const requestHandler = new HeldHttpHandler(clock, {
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
  const webhooksQueue = new Queue<WebhookMessage>(sqs, queues.create("webhooks"));
  // The service's settings as deployed: every default, and the names of this run's table and queues.
  const config = loadConfig({
    TABLE_NAME: "sim",
    BUCKET_NAME: "sim",
    INDEX_QUEUE_URL: indexQueue.url,
    CRAWL_QUEUE_URL: queues.create("crawl"),
    CHECKS_QUEUE_URL: checksQueue.url,
    WEBHOOKS_QUEUE_URL: webhooksQueue.url,
  });
  const web = new SafeFetcher({ allowPrivate: true });

  const hanging = tenantId(0);
  const importer = tenantId(1);
  const hungWebhook = tenantId(2);
  const waits = new Map<string, TenantWaits>();
  const waitsOf = (tenant: string) => {
    let w = waits.get(tenant);
    if (!w) {
      w = {
        checks: [],
        index: [],
        webhooks: [],
        mostChecks: 0,
        mostIndexing: 0,
        mostDeliveries: 0,
      };
      waits.set(tenant, w);
    }
    return w;
  };
  /** Runs work of a tenant, counting how much of its kind runs at once. */
  const running = new Map<string, number>();
  const tracked = async <R>(
    tenant: string,
    kind: "mostChecks" | "mostIndexing" | "mostDeliveries",
    work: () => Promise<R>,
  ) => {
    const key = `${kind}#${tenant}`;
    const count = (running.get(key) ?? 0) + 1;
    running.set(key, count);
    const w = waitsOf(tenant);
    w[kind] = Math.max(w[kind], count);
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
    // Written 25 to a request: the seeding is the harness's, not the night's, and a write per
    // item cost the 1,000-tenant run a minute of the emulator before the night began.
    const writes = Array.from({ length: Math.ceil(entries.length / 25) }, (_, i) =>
      entries.slice(i * 25, i * 25 + 25).map(({ tenant, competitor }) => ({
        PutRequest: {
          Item: {
            pk: COMPETITOR_INDEX,
            sk: `${tenant}#${competitor}`,
            workspaceId: tenant,
            competitorId: competitor,
            cadence: "hourly",
          },
        },
      })),
    );
    await mapLimit(writes, 8, async (requests) => {
      let unprocessed: Record<string, typeof requests> | undefined = { sim: requests };
      while (unprocessed?.sim?.length) {
        const written = await table.doc.send(new BatchWriteCommand({ RequestItems: unprocessed }));
        unprocessed = written.UnprocessedItems as typeof unprocessed;
      }
    });
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
    const indexExpected = (options.hostile ? options.importSources : 0) + tenants;
    const dead = () => queues.deadLetters("checks").length + queues.deadLetters("index").length;
    // Every endpoint's events but the hung one's, which are never delivered.
    const isHung = (tenant: string) => options.hostile && tenant === hungWebhook;
    const deliveriesExpected = (tenants - (options.hostile ? 1 : 0)) * options.webhookEvents;
    let delivered = 0;
    const deadDeliveries = () =>
      queues
        .deadLetters("webhooks")
        .filter((m) => !isHung((JSON.parse(m.body) as WebhookMessage).workspaceId)).length;
    const finished = () =>
      ended + indexed + dead() >= expected + indexExpected &&
      delivered + deadDeliveries() >= deliveriesExpected;

    // The webhooks worker: each tenant has one endpoint, subscribed to competitor events.
    const emitter = new WebhookEmitter({
      endpoints: {
        subscribers: async (workspaceId) => [{ id: endpointId(workspaceId), events: [EVENT_TYPE] }],
      },
      queue: webhooksQueue,
      cacheSeconds: 15,
    });
    const emit = (workspaceId: string, n: string) =>
      emitter.emit(workspaceId, EVENT_TYPE, { workspaceId, n, emittedAt: now() });
    const endpoints = {
      find: async (workspaceId: string, id: string): Promise<EndpointItem> => ({
        pk: workspaceId,
        sk: id,
        workspaceId,
        id,
        url: isHung(workspaceId)
          ? `${sites.origins.hanging}/hook`
          : `${sites.origins.healthy}/hook`,
        events: [EVENT_TYPE],
        description: null,
        secret: "whsec_c2ltdWxhdGVkLXNpZ25pbmctc2VjcmV0LTI0Yg==",
        createdAt: new Date(0).toISOString(),
      }),
      // No attempt logged before: every delivery's first receive attempts.
      attempt: async () => undefined,
      record: async () => undefined,
      signingSecret: async (endpoint: EndpointItem) => endpoint.secret,
      targetUrl: async (endpoint: EndpointItem) => endpoint.url,
    } as unknown as WebhookEndpoints;
    const attempted = new Set<string>();
    const deliveredIds = new Set<string>();
    let hungAttempts = 0;
    const poster: WebhookPoster = {
      post: (url, request, { timeoutMs, maxBytes }) => {
        const { workspaceId, emittedAt } = (JSON.parse(request.body) as { data: WebhookEventData })
          .data as { workspaceId: string; emittedAt: number };
        const eventId = request.headers["webhook-id"] ?? "";
        return tracked(workspaceId, "mostDeliveries", async () => {
          if (isHung(workspaceId)) hungAttempts++;
          if (!attempted.has(eventId)) {
            attempted.add(eventId);
            waitsOf(workspaceId).webhooks.push((now() - emittedAt) / 1000);
          }
          // An endpoint that never answers holds its attempt for the whole timeout.
          if (isHung(workspaceId)) {
            await clock.sleep(timeoutMs);
            return clock.real(() => web.post(url, request, { timeoutMs: HANG_PROBE_MS, maxBytes }));
          }
          await clock.sleep(latencyMs(WEBHOOK_P50_MS, eventId));
          const answer = await clock.real(() => web.post(url, request, { timeoutMs, maxBytes }));
          if (!deliveredIds.has(eventId) && answer.status === 200) {
            deliveredIds.add(eventId);
            delivered++;
          }
          return answer;
        });
      },
    };
    const deliverer = new WebhookDeliverer({
      endpoints,
      queue: webhooksQueue,
      poster,
      retrySeconds: config.WEBHOOK_RETRY_SECONDS,
      gate: deliveryGate(table, webhooksQueue, config.WEBHOOK_TIMEOUT_MS, now),
      now,
    });
    const webhooksWorker = queueWorkers.find((w) => w.name === "webhooks-worker");
    consume(queues, "webhooks-worker", (event, context) =>
      // As the function: the invocation's records of one endpoint take turns until its deadline.
      batchHandler(
        recordHandler(
          WebhookMessage,
          deliverer.invocation(now() + (webhooksWorker?.timeoutSeconds ?? 30) * 1000),
        ),
      )(event, context),
    );

    // The competitors whose checks find a change, and send their workspace's endpoint an event.
    const changing = new Set(
      entries.filter((_, n) => n % competitors < options.webhookEvents).map((e) => e.competitor),
    );
    const emitted = new Set<string>();

    const checker = {
      boundMs: () => CHECK_BOUND_MS,
      check: (workspaceId: string, competitor: string) =>
        tracked(workspaceId, "mostChecks", async () => {
          const key = `${workspaceId}#${competitor}`;
          waitsOf(workspaceId).checks.push((now() - (dueAt.get(key) ?? now())) / 1000);
          if (options.hostile && workspaceId === hanging) {
            // A site that hangs costs its check's reading budget, and nothing more.
            await clock.sleep(CHECK_BUDGET_MS);
            await clock.real(() =>
              web
                .fetch(`${sites.origins.hanging}/`, { timeoutMs: HANG_PROBE_MS })
                .catch(() => undefined),
            );
          } else {
            await clock.sleep(Math.min(CHECK_BUDGET_MS, latencyMs(15_000, key)));
            await clock.real(() => web.fetch(`${sites.origins.healthy}/`));
          }
          const changed = changing.has(competitor);
          if (changed && !emitted.has(key)) {
            emitted.add(key);
            await emit(workspaceId, competitor);
          }
          return { ok: true, changed };
        }),
    } as unknown as Checker;
    const checkDeps = {
      checker,
      competitors: { find: async () => ({}) } as unknown as Competitors,
      slots: new CheckSlots(table, config.CHECK_WORKSPACE_SLOTS),
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
            }
            return outcome;
          }),
        )(record);
      }),
    );

    const indexSentAt = new Map<string, number>();
    const indexedKeys = new Set<string>();
    const { share, leaseMs } = workerFairShare(config, table, indexQueue, "index");
    consume(queues, "index-worker", (event, context) => {
      // As the function: a workspace's records of one invocation share one slot.
      const inShare = invocationShare({ ...share, now }, leaseMs);
      return batchHandler(
        recordHandler(IndexMessage, (message) =>
          inShare(message, () =>
            tracked(message.workspaceId, "mostIndexing", async () => {
              const sent = indexSentAt.get(message.sourceId) ?? now();
              const first = !indexedKeys.has(message.sourceId);
              if (first) waitsOf(message.workspaceId).index.push((now() - sent) / 1000);
              await clock.sleep(
                Math.min(INDEX_LONGEST_MS, latencyMs(INDEX_P50_MS, message.sourceId)),
              );
              await clock.real(() => web.fetch(`${sites.origins.healthy}/`));
              if (first && !indexedKeys.has(message.sourceId)) {
                indexedKeys.add(message.sourceId);
                indexed++;
              }
            }),
          ),
        ),
      )(event, context);
    });

    // Each tenant adds one source at a time of its own during the sweep's spread; the importer
    // adds its whole import at once, a minute in.
    const capacity = {
      ...CHECK_CAPACITY,
      spreadSeconds: options.spreadSeconds ?? CHECK_CAPACITY.spreadSeconds,
    };
    const spreadMs = capacity.spreadSeconds * 1000;
    const at = (ms: number, work: () => Promise<unknown>) => void clock.sleep(ms).then(work);
    const sendIndex = (messages: IndexMessage[]) => {
      for (const m of messages) indexSentAt.set(m.sourceId, now());
      return indexQueue.sendAll(messages);
    };
    for (let i = 0; i < tenants; i++) {
      const tenant = tenantId(i);
      const message: IndexMessage = {
        kind: "index",
        workspaceId: tenant,
        sourceId: `src_${tenant}`,
        revision: 1,
      };
      at(uniform(`${tenant}#source`) * spreadMs, () => sendIndex([message]));
    }
    if (options.hostile) {
      const bulk = Array.from({ length: options.importSources }, (_, n) => ({
        kind: "index" as const,
        workspaceId: importer,
        sourceId: `src_${importer}_${n}`,
        revision: 1,
      }));
      at(60_000, () => sendIndex(bulk));
      // The tenant whose endpoint never answers gets a burst of events, a minute in.
      at(60_000, () =>
        Promise.all(
          Array.from({ length: options.hungEvents }, (_, n) => emit(hungWebhook, `burst${n}`)),
        ),
      );
      // The tenant whose sites hang asks for all its checks at once too, a minute in.
      const all = Array.from({ length: competitors }, (_, j) => `${competitorId(hanging, j)}all`);
      const checkAll = { ids: async () => all } as unknown as Competitors;
      at(60_000, () => {
        for (const id of all) dueAt.set(`${hanging}#${id}`, now());
        return enqueueWorkspace(checkAll, checksQueue, hanging);
      });
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
    // Progress every ten minutes of the night: a large night takes minutes of the machine.
    void (async () => {
      for (;;) {
        await clock.sleep(600_000);
        if (finished()) return;
        log(
          `${Math.round((now() - sweepStart) / 60_000)} min into the night: ${ended} of ${expected} checks, ${indexed} of ${indexExpected} sources, ${delivered} of ${deliveriesExpected} deliveries`,
        );
      }
    })();
    await sweepAll(table, recording, capacity, async () => true, new Date(sweepStart), now);
    log(`sweep queued ${entries.length} checks`);
    // A run that loses work must fail, not hang: twice the sweep's window is far past its end.
    await clock
      .run(
        finished,
        () => queues.nextAvailableAt(),
        () => queues.wake(),
        sweepStart + 4 * 3600_000,
      )
      .catch((err: Error) => {
        throw new Error(
          `${err.message}: ${ended} of ${expected} checks, ${indexed} of ${indexExpected} sources and ${delivered} of ${deliveriesExpected} deliveries ended`,
        );
      });
    return {
      sweepSeconds: (lastEnd - sweepStart) / 1000,
      checks: ended,
      givenUp,
      deferred,
      deadLetters: dead(),
      waits,
      hanging,
      importer,
      hungWebhook,
      hungAttempts,
      delivered,
      wallSeconds: (performance.now() - wallStarted) / 1000,
      cpuSeconds: ((cpu) => (cpu.user + cpu.system) / 1e6)(process.cpuUsage(cpuStarted)),
    };
  } finally {
    await queues.close();
    await sites.close();
    await dynamo.close();
  }
}
