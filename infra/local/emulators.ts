import { mkdir, mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
} from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import S3rver from "s3rver";
import { TABLE_INDEXES, TABLE_KEY } from "../../lib/store/schema.js";

export interface Emulator {
  endpoint: string;
  close(): Promise<void>;
}

/** A DynamoDB-compatible server (dynalite) on loopback; kept in `dir`, or in memory without one. */
export async function startDynamo(dir?: string): Promise<Emulator> {
  if (dir) await mkdir(dir, { recursive: true });
  const server = dynalite({
    ...(dir ? { path: dir } : {}),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** An S3 event notification, as s3rver emits it for each object created. */
export interface S3Notification {
  Records: Array<{ eventName: string; s3: { bucket: { name: string }; object: { key: string } } }>;
}

/** The bucket's CORS rule, as the stack sets it on AWS: browsers may POST presigned uploads. */
const BUCKET_CORS = `<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>POST</AllowedMethod><AllowedHeader>*</AllowedHeader></CORSRule></CORSConfiguration>`;

/**
 * An S3-compatible server (s3rver) on loopback, keeping objects as files under `dir` (without
 * one, in a temporary directory its close removes); `onEvent` receives its object-created
 * notifications.
 */
export async function startS3(
  dir?: string,
  buckets: string[] = [],
  onEvent?: (event: S3Notification) => void,
): Promise<Emulator> {
  const directory = dir ?? (await mkdtemp(join(tmpdir(), "s3rver-")));
  await mkdir(directory, { recursive: true });
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    directory,
    silent: true,
    vhostBuckets: false,
    configureBuckets: buckets.map((name) => ({ name, configs: [BUCKET_CORS] })),
  });
  if (onEvent) server.on("event", onEvent);
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close() {
      await server.close();
      if (!dir) await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Creates the service's table unless it exists (same keys as the CDK stack, on-demand). */
export async function ensureTable(client: DynamoDBClient, name: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
    return;
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
  }
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        TABLE_KEY.partitionKey,
        TABLE_KEY.sortKey,
        ...TABLE_INDEXES.flatMap((i) => [i.partitionKey, i.sortKey]),
      ].map((AttributeName) => ({ AttributeName, AttributeType: "S" })),
      KeySchema: [
        { AttributeName: TABLE_KEY.partitionKey, KeyType: "HASH" },
        { AttributeName: TABLE_KEY.sortKey, KeyType: "RANGE" },
      ],
      GlobalSecondaryIndexes: TABLE_INDEXES.map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: "HASH" },
          { AttributeName: index.sortKey, KeyType: "RANGE" },
        ],
        Projection: { ProjectionType: "ALL" },
      })),
    }),
  );
}
