import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { serve } from "@hono/node-server";
import type { SQSHandler } from "aws-lambda";
import { KeyStore } from "../auth/keys.js";
import { loadConfig, MAX_RECEIVE_COUNT } from "../config.js";
import { createStores } from "../store/clients.js";
import { ensureDefaultWorkspace } from "./bootstrap.js";
import { ensureTable, startDynamo, startS3 } from "./emulators.js";
import { localGateway } from "./gateway.js";
import { LocalQueues, type SqsHandler } from "./queues.js";

export interface LocalOptions {
  port: number;
  host: string;
  /** Where the emulators keep their data; in memory (and a temporary folder) when null. */
  dataDir: string | null;
  apiKey?: string | undefined;
  /** First retry delay of a failed queue message. */
  retryDelayMs?: number;
}

export interface LocalRuntime {
  url: string;
  workspaceId: string;
  newKey?: string | undefined;
  queues: LocalQueues;
  close(): Promise<void>;
}

const TABLE_NAME = "kb-intel";
const BUCKET_NAME = "kb-intel";

/**
 * The whole service in one process: emulated DynamoDB, S3 and SQS, every API function behind one
 * server, and the worker functions fed by the local queues. Functions are imported after the
 * environment points the AWS SDK at the emulators, exactly as they load on AWS.
 */
export async function startLocal(options: LocalOptions): Promise<LocalRuntime> {
  const dir = (name: string) => (options.dataDir ? join(options.dataDir, name) : undefined);
  const dynamo = await startDynamo(dir("dynamodb"));
  const s3 = await startS3(dir("s3"), [BUCKET_NAME]);
  const queues = new LocalQueues({
    ...(options.dataDir ? { stateFile: join(options.dataDir, "queues.json") } : {}),
    maxReceiveCount: MAX_RECEIVE_COUNT,
    retryDelayMs: options.retryDelayMs ?? 1000,
  });
  const sqsEndpoint = await queues.start();

  Object.assign(process.env, {
    AWS_REGION: process.env.AWS_REGION ?? "us-east-1",
    AWS_ACCESS_KEY_ID: "S3RVER",
    AWS_SECRET_ACCESS_KEY: "S3RVER",
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ENDPOINT_URL_SQS: sqsEndpoint,
    TABLE_NAME,
    BUCKET_NAME,
    S3_FORCE_PATH_STYLE: "true",
    INDEX_QUEUE_URL: queues.url("index"),
  });
  await ensureTable(new DynamoDBClient({}), TABLE_NAME);

  const [knowledgeApi, docsApi, indexWorker] = await Promise.all([
    import("../../functions/knowledge-api.js"),
    import("../../functions/docs-api.js"),
    import("../../functions/index-worker.js"),
  ]);
  const worker =
    (handler: SQSHandler): SqsHandler =>
    async (event, context) =>
      (await handler(event, context, () => undefined)) ?? undefined;
  queues.consume("index", worker(indexWorker.handler));

  const { table } = createStores(loadConfig());
  const defaults = await ensureDefaultWorkspace(table, new KeyStore(table, 0), options.apiKey);

  const gateway = localGateway([knowledgeApi.app, docsApi.app]);
  const server = serve({ fetch: gateway.fetch, port: options.port, hostname: options.host });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;

  return {
    url: `http://${options.host}:${port}`,
    workspaceId: defaults.workspaceId,
    newKey: defaults.newKey,
    queues,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await queues.close();
      await Promise.all([dynamo.close(), s3.close()]);
    },
  };
}
