import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { SQSHandler } from "aws-lambda";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Emulator, ensureTable, startDynamo } from "../../infra/local/emulators.js";
import { LocalQueues, type SqsHandler } from "../../infra/local/queues.js";
import { KeyStore } from "../../lib/auth/keys.js";
import { createServiceApp } from "../../lib/http/app.js";
import { bearerAuth } from "../../lib/http/auth.js";
import { fileLoader } from "../../lib/knowledge/indexing/file-loader.js";
import { Indexer } from "../../lib/knowledge/indexing/indexer.js";
import { LiveSources } from "../../lib/knowledge/retrieval/live-sources.js";
import { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { uploadsRoutes } from "../../lib/knowledge/uploads/routes.js";
import {
  type PendingUpload,
  type UploadSettings,
  Uploads,
} from "../../lib/knowledge/uploads/uploads.js";
import { DynamoWriterLock, SearchIndex } from "../../lib/search/index.js";
import { Blobs } from "../../lib/store/blobs.js";
import { type IndexMessage, Queue } from "../../lib/store/queue.js";
import { Table, wsKey } from "../../lib/store/table.js";
import { pdfBytes } from "../files/support/documents.js";
import { roomyQuotas } from "../support/aws.js";

/**
 * The presigned flow end to end, as the local runtime runs it: a real POST to s3rver with the
 * returned form, s3rver's `event` forwarded to the `upload-events` queue, the real
 * upload-events-worker handler, and an index worker with the file loader, up to search.
 */

const settings: UploadSettings = { maxBytes: 1024 * 1024, urlTtlSeconds: 600, graceSeconds: 300 };
const overdue = () => Date.now() + (settings.urlTtlSeconds + settings.graceSeconds + 1) * 1000;

let dynamo: Emulator;
let s3: S3rver;
let s3Dir: string;
let searchDir: string;
let queues: LocalQueues;
let stores: { table: Table; blobs: Blobs };
let sources: Sources;
let uploads: Uploads;
let retriever: IndexRetriever;
let api: ReturnType<typeof createServiceApp>;
let apiKey: string;
let workspaceId: string;
/** Off in the test that loses a notification. */
let forwardEvents = true;

/** A Lambda SQS handler as the local queues call it (as infra/local/runtime.ts does). */
const asyncHandler =
  (handler: SQSHandler): SqsHandler =>
  async (event, context) =>
    (await handler(event, context, () => undefined)) ?? undefined;

beforeAll(async () => {
  dynamo = await startDynamo();
  s3Dir = await mkdtemp(join(tmpdir(), "s3rver-uploads-"));
  s3 = new S3rver({
    address: "127.0.0.1",
    port: 0,
    directory: s3Dir,
    silent: true,
    vhostBuckets: false,
    configureBuckets: [{ name: "uploads-test" }],
  });
  const { port } = await s3.run();
  queues = new LocalQueues({ maxReceiveCount: 3, retryDelayMs: 20 });
  const sqsEndpoint = await queues.start();
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`,
    AWS_ENDPOINT_URL_SQS: sqsEndpoint,
    TABLE_NAME: "uploads-test",
    BUCKET_NAME: "uploads-test",
    S3_FORCE_PATH_STYLE: "true",
    INDEX_QUEUE_URL: queues.create("index"),
    CRAWL_QUEUE_URL: queues.create("crawl"),
    CHECKS_QUEUE_URL: queues.create("checks"),
    WEBHOOKS_QUEUE_URL: queues.create("webhooks"),
  });
  queues.create("upload-events");
  await ensureTable(new DynamoDBClient({}), "uploads-test");
  // The local runtime's forwarding: s3rver emits S3-shaped `{Records: [...]}` for every write.
  s3.on("event", (event: unknown) => {
    if (forwardEvents) queues.send("upload-events", JSON.stringify(event));
  });

  // The stores the worker builds from the same environment.
  const dynamoDoc = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
    marshallOptions: { removeUndefinedValues: true },
  });
  stores = {
    table: new Table(dynamoDoc, "uploads-test"),
    blobs: new Blobs(new S3Client({ forcePathStyle: true }), "uploads-test"),
  };
  sources = new Sources({
    ...stores,
    indexQueue: new Queue(new SQSClient({}), queues.url("index")),
  });
  uploads = new Uploads({ ...stores, sources }, settings);
  // The search index on local disk, so the bucket's notifications carry only the uploads.
  searchDir = await mkdtemp(join(tmpdir(), "search-uploads-"));
  const search = new SearchIndex({
    location: { uri: searchDir },
    lock: new DynamoWriterLock(stores.table),
  });
  retriever = new IndexRetriever({ index: search, live: new LiveSources(stores.table) });
  const indexer = new Indexer({
    table: stores.table,
    blobs: stores.blobs,
    search,
    chunking: { size: 400, overlap: 50 },
    loaders: { file: fileLoader(stores.blobs) },
  });
  const worker = await import("../../functions/upload-events-worker.js");
  queues.consume("upload-events", asyncHandler(worker.handler));
  queues.consume("index", async ({ Records }) => {
    for (const record of Records) {
      await indexer.handle(JSON.parse(record.body) as IndexMessage, {
        receiveCount: Number(record.attributes.ApproximateReceiveCount),
        maxReceiveCount: 3,
      });
    }
    return { batchItemFailures: [] };
  });

  const keys = new KeyStore(stores.table, 0);
  workspaceId = (await keys.createWorkspace("Uploads")).id;
  apiKey = (await keys.createKey(workspaceId)).key;
  api = createServiceApp({
    authenticate: bearerAuth(keys),
    modules: [uploadsRoutes({ uploads, quotas: roomyQuotas(stores.table) })],
  });
});

afterAll(async () => {
  await queues.close();
  await Promise.all([s3.close(), dynamo.close()]);
  await Promise.all([
    rm(s3Dir, { recursive: true, force: true }),
    rm(searchDir, { recursive: true, force: true }),
  ]);
});

function startUpload(body: Record<string, unknown>) {
  return api.request("/api/knowledge/uploads", {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function pending(filename: string, contentType: string, bytes: number) {
  const res = await startUpload({ filename, contentType, bytes });
  expect(res.status).toBe(200);
  return (await res.json()) as PendingUpload;
}

/** What a browser or `curl -F` does with the answer: the fields in order, then the file. */
async function post(upload: PendingUpload, bytes: Uint8Array, fields = upload.fields) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append("file", new Blob([new Uint8Array(bytes)]), "ignored-by-s3");
  const res = await fetch(upload.uploadUrl, { method: upload.method, body: form });
  expect(res.status).toBeLessThan(300);
  await queues.idle();
}

/** The workspace's upload bytes taken from today's quota. */
async function quotaUsed(): Promise<number> {
  const day = new Date().toISOString().slice(0, 10);
  const counter = await stores.table.get<{ pk: string; sk: string; used: number }>(
    wsKey(workspaceId),
    `QUOTA#${day}#upload_bytes`,
  );
  return counter?.used ?? 0;
}

/** Source ids of the best search hits for a query. */
const hits = async (query: string) =>
  (await retriever.search(workspaceId, query, 5)).map((hit) => hit.source_id);

async function reindexed(id: string) {
  await sources.reindex(workspaceId, id);
  await queues.idle();
  return sources.get(workspaceId, id);
}

const policyOf = (upload: PendingUpload) =>
  JSON.parse(Buffer.from(upload.fields.Policy ?? "", "base64").toString("utf8")) as {
    conditions: unknown[];
  };

describe("presigned uploads", () => {
  it("takes a PDF from the upload to search results with its page", async () => {
    const bytes = await pdfBytes([
      { heading: "Security", lines: ["Data is encrypted at rest."] },
      { lines: ["Single sign-on comes with the enterprise plan."] },
    ]);
    const upload = await pending("security.pdf", "application/pdf", bytes.length);
    expect(upload).toMatchObject({ id: expect.stringMatching(/^kb_/), method: "POST" });
    expect(Date.parse(upload.expiresAt)).toBeGreaterThan(Date.now());
    expect(await sources.get(workspaceId, upload.id)).toMatchObject({
      status: "awaiting_upload",
      type: "file",
      name: "security.pdf",
      source_url_or_path: "security.pdf",
    });
    const listed = await sources.list(workspaceId, {}, 50);
    expect(listed.items.find((item) => item.id === upload.id)?.status).toBe("awaiting_upload");

    await post(upload, bytes);
    expect(await sources.get(workspaceId, upload.id)).toMatchObject({
      status: "indexed",
      error_code: null,
    });
    const [hit] = await retriever.search(workspaceId, "single sign-on", 1);
    expect(hit).toMatchObject({ source_id: upload.id, page: 2 });
    const [heading] = await retriever.search(workspaceId, "encrypted at rest", 1);
    expect(heading).toMatchObject({ heading: "Security", page: 1 });
  });

  it("signs a policy that fixes the key, the exact length and the content type", async () => {
    const upload = await pending("notes.md", "text/plain", 1234);
    expect(upload.fields).toMatchObject({
      key: `uploads/ws/${workspaceId}/kb/${upload.id}/upload`,
      "Content-Type": "text/markdown",
    });
    expect(policyOf(upload).conditions).toEqual(
      expect.arrayContaining([
        ["content-length-range", 1234, 1234],
        { key: upload.fields.key },
        { "Content-Type": "text/markdown" },
      ]),
    );
    await sources.delete(workspaceId, upload.id);
  });

  it("fails the source and drops the object when the file is not the declared size", async () => {
    const upload = await pending("short.txt", "text/plain", 100);
    const used = await quotaUsed();
    await post(upload, Buffer.from("far fewer than a hundred bytes"));
    expect(await sources.get(workspaceId, upload.id)).toMatchObject({
      status: "failed",
      error_code: "upload_mismatch",
      last_error: expect.stringContaining("not the 100 declared"),
    });
    expect(await stores.blobs.exists(upload.fields.key ?? "")).toBe(false);
    // A refused file used none of the upload quota it reserved.
    expect(await quotaUsed()).toBe(used - 100);
  });

  it("fails the source when the file is sent with another content type", async () => {
    const text = Buffer.from("Name,Role\nAda,CTO\n");
    const upload = await pending("team.csv", "text/csv", text.length);
    await post(upload, text, { ...upload.fields, "Content-Type": "application/pdf" });
    expect(await sources.get(workspaceId, upload.id)).toMatchObject({
      status: "failed",
      error_code: "upload_mismatch",
      last_error: expect.stringContaining("application/pdf"),
    });
  });

  it("acts on the first notification only", async () => {
    const text = Buffer.from("# Launch\nThe launch is in May.");
    const upload = await pending("launch.md", "text/markdown", text.length);
    await post(upload, text);
    const indexed = await sources.get(workspaceId, upload.id);
    expect(indexed.status).toBe("indexed");
    const key = upload.fields.key ?? "";
    expect(await uploads.complete(key)).toBe("ignored");
    queues.send(
      "upload-events",
      JSON.stringify({ Records: [{ eventName: "ObjectCreated:Post", s3: { object: { key } } }] }),
    );
    await queues.idle();
    expect(await sources.get(workspaceId, upload.id)).toEqual(indexed);
  });

  it("expires an upload that never arrives, once, and returns its bytes to the quota", async () => {
    const upload = await pending("never.pdf", "application/pdf", 5000);
    const used = await quotaUsed();
    expect(await uploads.expire()).toEqual({ expired: 0, recovered: 0 });
    expect(await uploads.expire(overdue())).toEqual({ expired: 1, recovered: 0 });
    expect(await quotaUsed()).toBe(used - 5000);
    expect(await sources.get(workspaceId, upload.id)).toMatchObject({
      status: "failed",
      error_code: "upload_expired",
      last_error: expect.stringContaining(`expired at ${upload.expiresAt}`),
    });
    expect(await uploads.expire(overdue())).toEqual({ expired: 0, recovered: 0 });
    expect(await quotaUsed()).toBe(used - 5000);
  });

  it("lets the watchdog index an upload whose notification was lost", async () => {
    const text = Buffer.from("Churn fell to two percent.");
    const upload = await pending("churn.txt", "text/plain", text.length);
    forwardEvents = false;
    try {
      await post(upload, text);
    } finally {
      forwardEvents = true;
    }
    expect((await sources.get(workspaceId, upload.id)).status).toBe("awaiting_upload");
    expect(await uploads.expire(overdue())).toEqual({ expired: 0, recovered: 1 });
    await queues.idle();
    expect((await sources.get(workspaceId, upload.id)).status).toBe("indexed");
  });

  it("indexes the accepted file and only it, whatever is posted to the form later", async () => {
    const accepted = Buffer.from("# Plans\nThe starter plan costs nineteen dollars a month.");
    const upload = await pending("plans.md", "text/markdown", accepted.length);
    await post(upload, accepted);
    expect((await sources.get(workspaceId, upload.id)).status).toBe("indexed");
    const used = await quotaUsed();

    // The same form again, within its policy (same size, same type), other words.
    const replacement = Buffer.from(
      "# Plans\nAll plans were withdrawn; ask for a quote.".padEnd(accepted.length, "!"),
    );
    expect(replacement.length).toBe(accepted.length);
    await post(upload, replacement);
    expect(await stores.blobs.exists(upload.fields.key ?? "")).toBe(false);

    const again = await reindexed(upload.id);
    expect(again).toMatchObject({ status: "indexed", error_code: null });
    expect(await hits("nineteen dollars")).toContain(upload.id);
    expect(await hits("withdrawn quote")).not.toContain(upload.id);
    // The accepted upload keeps what it was charged: it was used.
    expect(await quotaUsed()).toBe(used);
  });

  it("fails a reindex clearly when the kept file is no longer the one accepted", async () => {
    const text = Buffer.from("Renewals happen every March.");
    const upload = await pending("renewals.txt", "text/plain", text.length);
    await post(upload, text);
    const source = await sources.get(workspaceId, upload.id);
    expect(source.status).toBe("indexed");
    expect(source.accepted_file).toMatchObject({ bytes: text.length, contentType: "text/plain" });

    // Whatever wrote it (an operator, a bug), a same-size file under the kept key is not it.
    await stores.blobs.put(source.content_key ?? "", "Renewals happen every April.", "text/plain");
    expect(await reindexed(upload.id)).toMatchObject({
      status: "failed",
      error_code: "upload_changed",
    });
  });

  it("drops what is posted to the form after the upload failed", async () => {
    const upload = await pending("late.txt", "text/plain", 20);
    await post(upload, Buffer.from("not twenty"));
    expect((await sources.get(workspaceId, upload.id)).error_code).toBe("upload_mismatch");

    await post(upload, Buffer.from("exactly twenty bytes"));
    expect(await stores.blobs.exists(upload.fields.key ?? "")).toBe(false);
    expect(await reindexed(upload.id)).toMatchObject({
      status: "failed",
      error_code: "content_missing",
    });
  });

  it("keeps no object for a source deleted before its upload came", async () => {
    const text = Buffer.from("orphan");
    const upload = await pending("orphan.txt", "text/plain", text.length);
    await sources.delete(workspaceId, upload.id);
    await post(upload, text);
    expect(await stores.blobs.exists(upload.fields.key ?? "")).toBe(false);
  });
});

describe("starting an upload", () => {
  it("answers 415 with the accepted types for an unsupported or contradictory type", async () => {
    const res = await startUpload({ filename: "photo.png", contentType: "image/png", bytes: 10 });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({
      error: {
        code: "unsupported_media_type",
        details: { extensions: expect.arrayContaining([".pdf", ".docx"]) },
      },
    });
    const contradictory = await startUpload({
      filename: "deck.docx",
      contentType: "application/pdf",
      bytes: 10,
    });
    expect(contradictory.status).toBe(415);
  });

  it("answers 413 above the limit and 400 for an empty file", async () => {
    const big = await startUpload({
      filename: "big.pdf",
      contentType: "application/pdf",
      bytes: 1024 ** 3,
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({
      error: { code: "payload_too_large", details: { limit: settings.maxBytes } },
    });
    const empty = await startUpload({
      filename: "a.pdf",
      contentType: "application/pdf",
      bytes: 0,
    });
    expect(empty.status).toBe(400);
  });
});
