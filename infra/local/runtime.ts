import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { serve } from "@hono/node-server";
import type { SQSHandler } from "aws-lambda";
import {
  apiFunctions,
  cronOf,
  QUEUES,
  type QueueWorker,
  queueUrlVariable,
  queueWorkers,
  scheduledFunctions,
} from "../../functions/manifest.js";
import { KeyStore } from "../../lib/auth/keys.js";
import { loadConfig, MAX_RECEIVE_COUNT } from "../../lib/config.js";
import { UPLOAD_NOTIFICATION_FILTER } from "../../lib/knowledge/uploads/files.js";
import { createStores } from "../../lib/store/clients.js";
import { ensureDefaultWorkspace } from "./bootstrap.js";
import { ensureTable, startDynamo, startS3 } from "./emulators.js";
import { localGateway } from "./gateway.js";
import { LOCAL_KEY, LocalKms, localKeyFile } from "./keys.js";
import { LocalQueues, recursiveLoopOf, type SqsHandler } from "./queues.js";
import { LocalScheduler } from "./scheduler.js";

export interface LocalOptions {
  port: number;
  host: string;
  /** Where the emulators keep their data; in memory (and a temporary folder) when null. */
  dataDir: string | null;
  apiKey?: string | undefined;
  /** First retry delay of a failed queue message. */
  retryDelayMs?: number;
  /**
   * Invocations at once per worker, by name, instead of the local default (`localConcurrency`):
   * a test runs a worker as wide as the manifest says.
   */
  workerConcurrency?: Record<string, number>;
  /**
   * Keeps the search index in the bucket (`s3://<bucket>/search`), as on AWS, instead of on disk
   * beside the data: slower, but every read and write of the engine is an S3 request, which the
   * bench counts.
   */
  searchInBucket?: boolean;
  /**
   * The S3 endpoint the service and the engine are given, from the emulator's: by default the
   * emulator itself; the bench puts its request counter (bench/core/s3-counter.ts) in between.
   */
  s3Endpoint?: (emulator: string) => Promise<string>;
}

export interface LocalRuntime {
  url: string;
  workspaceId: string;
  newKey?: string | undefined;
  queues: LocalQueues;
  keys: KeyStore;
  close(): Promise<void>;
}

/** A Lambda SQS handler as the queue driver calls it (promise style, no callback). */
const asyncHandler =
  (handler: SQSHandler): SqsHandler =>
  async (event, context) =>
    (await handler(event, context, () => undefined)) ?? undefined;

/**
 * A worker's invocations at once locally: 2 or 3, few enough for a laptop (more invocations of
 * one process only contend for its cores), and one more than a workspace's share of it where that
 * share is smaller (the checks' 2 slots), so one workspace at its share still leaves the others an
 * invocation, as on AWS; never more than the manifest's maxConcurrency.
 */
const LOCAL_MAX_CONCURRENCY = 3;
export const localConcurrency = (worker: QueueWorker) =>
  Math.min(
    worker.maxConcurrency,
    LOCAL_MAX_CONCURRENCY,
    Math.max(2, (worker.workspaceSlots ?? 0) + 1),
  );

export const TABLE_NAME = "kb-intel";
export const RUNTIME_FILE = "runtime.json";

/** What a running local runtime tells other local processes (the keys CLI). */
export interface RuntimeState {
  pid: number;
  dynamoEndpoint: string;
  sqsEndpoint: string;
  tableName: string;
}

/** The state of the local runtime running on `dataDir`, or undefined when none is running. */
export async function runningRuntime(dataDir: string): Promise<RuntimeState | undefined> {
  try {
    const state = JSON.parse(await readFile(join(dataDir, RUNTIME_FILE), "utf8")) as RuntimeState;
    process.kill(state.pid, 0);
    return state;
  } catch {
    return undefined;
  }
}

export const BUCKET_NAME = "kb-intel";

/**
 * The whole service in one process: emulated DynamoDB, S3 and SQS, every API function behind one
 * server, and the worker functions fed by the local queues. Functions are imported after the
 * environment points the AWS SDK at the emulators, exactly as they load on AWS.
 */
export async function startLocal(options: LocalOptions): Promise<LocalRuntime> {
  const dir = (name: string) => (options.dataDir ? join(options.dataDir, name) : undefined);
  const searchDir = options.dataDir
    ? resolve(options.dataDir, "search")
    : await mkdtemp(join(tmpdir(), "kb-search-"));
  const dynamo = await startDynamo(dir("dynamodb"));
  const queues = new LocalQueues({
    ...(options.dataDir ? { stateFile: join(options.dataDir, "queues.json") } : {}),
    maxReceiveCount: MAX_RECEIVE_COUNT,
    retryDelayMs: options.retryDelayMs ?? 1000,
  });
  const sqsEndpoint = await queues.start();
  // The KMS key of webhook secrets: its master key beside the data, or in memory without it.
  const kms = new LocalKms(options.dataDir ? { keyFile: localKeyFile(options.dataDir) } : {});
  const kmsEndpoint = await kms.start();
  // The bucket notifies the uploads queue of presigned uploads, as the stack configures on AWS.
  const { prefix, suffix } = UPLOAD_NOTIFICATION_FILTER;
  const s3 = await startS3(dir("s3"), [BUCKET_NAME], (event) => {
    if (
      event.Records.some(
        ({ s3: { object } }) => object.key.startsWith(prefix) && object.key.endsWith(suffix),
      )
    ) {
      queues.send("uploads", JSON.stringify(event));
    }
  });

  const s3Endpoint = options.s3Endpoint ? await options.s3Endpoint(s3.endpoint) : s3.endpoint;

  Object.assign(process.env, {
    AWS_REGION: process.env.AWS_REGION ?? "us-east-1",
    AWS_ACCESS_KEY_ID: "S3RVER",
    AWS_SECRET_ACCESS_KEY: "S3RVER",
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_S3: s3Endpoint,
    AWS_ENDPOINT_URL_SQS: sqsEndpoint,
    AWS_ENDPOINT_URL_KMS: kmsEndpoint,
    DATA_KEY_ID: LOCAL_KEY.alias,
    TABLE_NAME,
    BUCKET_NAME,
    S3_FORCE_PATH_STYLE: "true",
    // The search index on disk beside the rest of the data (a temporary folder without one): the
    // engine's commits on local disk are atomic, and far faster than through the S3 emulator.
    // In the bucket only when asked, to measure the engine as it runs on AWS.
    SEARCH_INDEX_URI: options.searchInBucket ? `s3://${BUCKET_NAME}/search` : searchDir,
    // Email (digests) is written as .eml files beside the data instead of sent through SES.
    MAIL_OUTBOX_DIR:
      process.env.MAIL_OUTBOX_DIR ??
      (options.dataDir ? resolve(options.dataDir, "outbox") : join(tmpdir(), "kb-outbox")),
    MAIL_FROM: process.env.MAIL_FROM ?? "digests@kb-intel.localhost",
    // Any page may call the local service unless CORS_ORIGINS says otherwise (none on AWS).
    CORS_ORIGINS: process.env.CORS_ORIGINS ?? "*",
    ...Object.fromEntries(QUEUES.map((queue) => [queueUrlVariable(queue), queues.create(queue)])),
  });
  await ensureTable(new DynamoDBClient({}), TABLE_NAME);

  const apps = await Promise.all(
    apiFunctions.map(async (fn) => ({
      name: fn.name,
      app: (await fn.load()).app,
      memoryMb: fn.memoryMb,
    })),
  );
  const scheduler = new LocalScheduler();
  for (const fn of scheduledFunctions)
    scheduler.add(fn.name, cronOf(fn), (await fn.load()).handler);
  const workers = await Promise.all(
    queueWorkers.map(async (worker) => ({ worker, handler: (await worker.load()).handler })),
  );

  const config = loadConfig();
  const { table } = createStores(config);
  const keys = new KeyStore(table, 0);
  const defaults = await ensureDefaultWorkspace(table, keys, options.apiKey);

  const gateway = localGateway(apps, { corsOrigins: config.CORS_ORIGINS });
  const server = serve({ fetch: gateway.fetch, port: options.port, hostname: options.host });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  // Messages left from the last run are delivered only now, in the background: one that hangs or
  // crashes the process cannot keep the server from listening. A worker runs in a loop of its own
  // messages past Lambda's limit only when its manifest entry declares `recursion`, read before
  // each delivery (RecursiveLoop: Allow on AWS).
  for (const { worker, handler } of workers) {
    queues.consume(worker.queue, asyncHandler(handler), {
      batchSize: worker.batchSize,
      concurrency: options.workerConcurrency?.[worker.name] ?? localConcurrency(worker),
      timeoutMs: worker.timeoutSeconds * 1000,
      functionName: worker.name,
      memoryMb: worker.memoryMb,
      recursiveLoop: recursiveLoopOf(worker),
    });
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  const stateFile = options.dataDir ? join(options.dataDir, RUNTIME_FILE) : undefined;
  if (stateFile) {
    // Lets `npm run keys` and `npm run redrive` reach this process's table and queues.
    const state: RuntimeState = {
      pid: process.pid,
      dynamoEndpoint: dynamo.endpoint,
      sqsEndpoint,
      tableName: TABLE_NAME,
    };
    await writeFile(stateFile, JSON.stringify(state));
  }

  return {
    url: `http://${options.host}:${port}`,
    workspaceId: defaults.workspaceId,
    newKey: defaults.newKey,
    queues,
    keys,
    async close() {
      scheduler.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (stateFile) await rm(stateFile, { force: true });
      await queues.close();
      await Promise.all([dynamo.close(), s3.close(), kms.close()]);
      if (!options.dataDir) await rm(searchDir, { recursive: true, force: true });
    },
  };
}
