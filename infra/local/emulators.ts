import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
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
import { checkPostPolicy, type EmulatorCredentials, S3Failure } from "./post-policy.js";

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

/** The emulator's one key (s3rver's, which the local runtime gives the AWS SDK). */
const S3_CREDENTIALS: EmulatorCredentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

/**
 * An S3-compatible server (s3rver) on loopback, keeping objects as files under `dir` (without
 * one, in a temporary directory its close removes); `onEvent` receives its object-created
 * notifications.
 *
 * s3rver ignores the policy of a browser-based upload (a presigned POST): any form would write
 * any key of the bucket. A proxy in front of it checks each such upload as S3 does
 * (post-policy.ts) and answers S3's error without passing on what it refuses; every other request
 * goes through unchanged.
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
  const { port: s3rverPort } = await server.run();
  const proxy = createServer((req, res) => {
    // A client gone before its form arrived whole gets no answer.
    if (isFormUpload(req)) checkedUpload(req, res, s3rverPort).catch(() => res.destroy());
    else forward(req, res, s3rverPort);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    async close() {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await server.close();
      if (!dir) await rm(directory, { recursive: true, force: true });
    },
  };
}

/** A browser-based upload: a multipart form POSTed to a bucket (path style), no sub-resource. */
function isFormUpload(req: IncomingMessage): boolean {
  const url = new URL(req.url ?? "/", "http://s3");
  return (
    req.method === "POST" &&
    /^\/[^/]+\/?$/.test(url.pathname) &&
    url.search === "" &&
    /^multipart\/form-data/i.test(req.headers["content-type"] ?? "")
  );
}

/** Passes a request on to s3rver, with `body` when it was read already, and its answer back. */
function forward(req: IncomingMessage, res: ServerResponse, port: number, body?: Buffer) {
  const { expect: _continue, ...headers } = req.headers;
  if (body) {
    delete headers["transfer-encoding"];
    headers["content-length"] = String(body.length);
  }
  const upstream = request(
    { host: "127.0.0.1", port, method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", () => res.destroy());
  res.on("close", () => upstream.destroy());
  if (body) upstream.end(body);
  else req.pipe(upstream);
}

/** Reads a form upload whole, checks it against its policy, and stores it only if S3 would. */
async function checkedUpload(req: IncomingMessage, res: ServerResponse, port: number) {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  const body = Buffer.concat(parts);
  let form: FormData;
  try {
    form = await new Response(body, {
      headers: { "content-type": req.headers["content-type"] ?? "" },
    }).formData();
  } catch {
    return refuse(
      req,
      res,
      new S3Failure(
        400,
        "MalformedPOSTRequest",
        "The body of your POST request is not well-formed multipart/form-data.",
      ),
    );
  }
  const fields: Array<[string, string]> = [];
  let fileBytes: number | undefined;
  for (const [name, value] of form) {
    if (name.toLowerCase() === "file") {
      fileBytes = typeof value === "string" ? Buffer.byteLength(value) : value.size;
      break;
    }
    if (typeof value === "string") fields.push([name, value]);
  }
  // Without a file s3rver gives S3's own answer, and stores nothing.
  const bucket = decodeURIComponent(
    new URL(req.url ?? "/", "http://s3").pathname.split("/")[1] ?? "",
  );
  const failure =
    fileBytes === undefined
      ? undefined
      : checkPostPolicy({ bucket, fields, fileBytes }, [S3_CREDENTIALS]);
  if (failure) return refuse(req, res, failure);
  forward(req, res, port, body);
}

/** S3's error answer; a browser's page may read it, as the bucket's CORS rule allows any origin. */
function refuse(req: IncomingMessage, res: ServerResponse, failure: S3Failure) {
  res.writeHead(failure.status, {
    "content-type": "application/xml",
    ...(req.headers.origin ? { "access-control-allow-origin": "*" } : {}),
  });
  res.end(failure.xml());
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
