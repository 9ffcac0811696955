import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { S3Client } from "@aws-sdk/client-s3";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueWorkers } from "../../functions/manifest.js";
import { ensureTable, startDynamo, startS3 } from "../../infra/local/emulators.js";
import { CONFIG_KEYS, MAX_RECEIVE_COUNT } from "../../lib/config.js";
import { DEFAULT_PARSE_LIMITS } from "../../lib/files/limits.js";
import { newId } from "../../lib/ids.js";
import {
  indexingMarker,
  type NewSource,
  newSourceItem,
  type SourceItem,
  sourceKey,
} from "../../lib/knowledge/sources/sources.js";
import { Blobs } from "../../lib/store/blobs.js";
import { Table } from "../../lib/store/table.js";
import { zip } from "../files/support/zip.js";
import { prose } from "../support/sites.js";

/**
 * The index worker at its limits: one batch of five files of the largest size accepted, in a
 * process with the function's memory setting, run as Lambda runs it. Every file ends indexed or
 * failed with a reason (a file that found the process busy is redelivered, as SQS would), the
 * process never dies, and its peak memory, threads included, stays under the function's.
 */
const WORKER = queueWorkers.find((w) => w.name === "index-worker");
if (!WORKER) throw new Error("no index-worker in the manifest");
const MAX = DEFAULT_PARSE_LIMITS.maxBytes;
const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
const WS = "ws_memory";

/** `text` repeated to exactly `bytes` bytes. */
const filled = (text: string, bytes = MAX) => Buffer.alloc(bytes, text);

/** A PDF of one page of text, padded to the limit with an incompressible stream nothing uses. */
async function paddedPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage().drawText("Quarterly pricing review", { x: 50, y: 700, size: 12, font });
  const head = (await doc.save()).byteLength;
  doc.context.register(doc.context.stream(randomBytes(MAX - head - 4096)));
  return doc.save({ useObjectStreams: false });
}

const DOCX_TYPES =
  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const DOCX_RELS =
  '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';

/**
 * A DOCX brought to the size limit by an incompressible image, with `paragraphs` of one word
 * after `runs` empty bold runs each: one paragraph for a plain document, or 180,000 of twenty
 * runs, 160 MB of markup (within the 256 MB a document may unpack to) for little text, which
 * drives the parser to the limit of its heap.
 */
function docx(paragraphs: number, runs = 0): Buffer {
  const xml = (s: string) => Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>${s}`);
  const empty = "<w:r><w:rPr><w:b/></w:rPr><w:t></w:t></w:r>".repeat(runs);
  const paragraph = `<w:p>${empty}<w:r><w:t>onboarding</w:t></w:r></w:p>`;
  const document = xml(
    `<w:document ${W}><w:body>${paragraph.repeat(paragraphs)}</w:body></w:document>`,
  );
  const parts = [
    { name: "[Content_Types].xml", data: xml(DOCX_TYPES) },
    { name: "_rels/.rels", data: xml(DOCX_RELS) },
    { name: "word/document.xml", data: document },
  ];
  const packed = zip(parts).byteLength;
  return zip([
    ...parts,
    { name: "word/media/image1.png", data: randomBytes(MAX - packed - 262_144) },
  ]);
}

let dir: string;
let stop: () => Promise<void>;
let env: Record<string, string>;
let table: Table;
let blobs: Blobs;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kb-worker-memory-"));
  const [dynamo, s3] = await Promise.all([startDynamo(), startS3(undefined, ["bucket"])]);
  stop = async () => {
    await Promise.all([dynamo.close(), s3.close()]);
  };
  const dynamoClient = new DynamoDBClient({ endpoint: dynamo.endpoint, credentials });
  await ensureTable(dynamoClient, "table");
  table = new Table(
    DynamoDBDocumentClient.from(dynamoClient, { marshallOptions: { removeUndefinedValues: true } }),
    "table",
  );
  blobs = new Blobs(
    new S3Client({ endpoint: s3.endpoint, credentials, forcePathStyle: true }),
    "bucket",
  );
  env = {
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(WORKER.memoryMb),
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    TABLE_NAME: "table",
    BUCKET_NAME: "bucket",
    S3_FORCE_PATH_STYLE: "true",
    // A URL source on a closed local port: a transient failure, retried until its last delivery.
    ALLOW_PRIVATE_URLS: "true",
    SEARCH_INDEX_URI: join(dir, "search"),
    // The worker sends nothing here; every queue still needs a URL.
    ...Object.fromEntries(
      CONFIG_KEYS.filter((key) => key.endsWith("_QUEUE_URL")).map((key) => [
        key,
        `http://127.0.0.1:9/${key}`,
      ]),
    ),
  };
});
afterAll(async () => {
  await stop?.();
  await rm(dir, { recursive: true, force: true });
});

/** Records a source as queued for indexing. */
async function queued(fields: NewSource & { id: string }) {
  const item = newSourceItem(WS, fields);
  await table.create({ ...item, ...indexingMarker(WS, item.id, item.created_at) });
  return item.id;
}

/** Stores a file and records its source as queued, as an upload does. */
async function fileSource(filename: string, bytes: Uint8Array, contentType: string) {
  const id = newId("source");
  const content_key = `ws/${WS}/sources/${id}/${filename}`;
  await blobs.put(content_key, bytes, contentType);
  return queued({ id, type: "file", name: filename, source_url_or_path: filename, content_key });
}

const sourceOf = (id: string) => table.get<SourceItem>(`WS#${WS}`, sourceKey(id));

/** One invocation of the worker in a process of its own; its answer, peak memory and exit code. */
async function invoke(event: SQSEvent) {
  const file = join(dir, "event.json");
  await writeFile(file, JSON.stringify(event));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "test/support/index-worker-process.ts", file],
    { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (part: Buffer) => {
    out += part.toString();
  });
  child.stderr.on("data", (part: Buffer) => {
    err += part.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const last = out.trim().split("\n").at(-1) ?? "";
  if (code !== 0 || !last.startsWith("{")) throw new Error(`worker died (${code}):\n${err}`);
  return JSON.parse(last) as { response: SQSBatchResponse; maxRssMb: number };
}

const record = (sourceId: string, receiveCount: number) => ({
  messageId: `m-${sourceId}`,
  receiptHandle: sourceId,
  body: JSON.stringify({ kind: "index", workspaceId: WS, sourceId, revision: 1 }),
  attributes: { ApproximateReceiveCount: String(receiveCount) },
  messageAttributes: {},
  md5OfBody: "",
  eventSource: "aws:sqs",
  eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:index",
  awsRegion: "us-east-1",
});

describe("the index worker with five maximal files in one batch", () => {
  it("indexes or cleanly fails every one, stays alive and within the function's memory", async () => {
    const ids = [
      await fileSource("padded.pdf", await paddedPdf(), "application/pdf"),
      await fileSource("padded.docx", docx(1), DOCX),
      await fileSource("dense.docx", docx(180_000, 20), DOCX),
      await fileSource("table.csv", filled("plan,price,notes\nPro,49,monthly\n"), "text/csv"),
      await fileSource("log.txt", filled(`${prose("onboarding", 10)}\n`), "text/plain"),
    ];
    let pending = ids;
    const peaks: number[] = [];
    // SQS redelivers what the batch reports failed, until the last delivery.
    for (let receive = 1; receive <= MAX_RECEIVE_COUNT && pending.length > 0; receive++) {
      const { response, maxRssMb } = await invoke({
        Records: pending.map((id) => record(id, receive)),
      } as SQSEvent);
      peaks.push(maxRssMb);
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      pending = pending.filter((id) => failed.has(`m-${id}`));
    }
    const [pdf, plainDocx, ...heavy] = await Promise.all(ids.map(sourceOf));
    // The files that parse within bounds are indexed, however long they waited their turn.
    expect([pdf?.status, plainDocx?.status]).toEqual(["indexed", "indexed"]);
    for (const source of heavy) {
      expect(source).toMatchObject({ status: "failed", last_error: expect.any(String) });
    }
    expect(Math.max(...peaks)).toBeLessThan(WORKER.memoryMb);
  }, 600_000);

  it("marks a record failed on its last delivery while the rest of its batch succeeds", async () => {
    const fine = await fileSource("fine.txt", Buffer.from(prose("onboarding", 2)), "text/plain");
    const unreachable = await queued({
      id: newId("source"),
      type: "url",
      name: "Pricing",
      source_url_or_path: "http://127.0.0.1:9/pricing",
    });
    const { response } = await invoke({
      Records: [record(fine, 1), record(unreachable, MAX_RECEIVE_COUNT)],
    } as SQSEvent);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: `m-${unreachable}` }]);
    expect(await sourceOf(fine)).toMatchObject({ status: "indexed" });
    expect(await sourceOf(unreachable)).toMatchObject({
      status: "failed",
      error_code: expect.any(String),
      last_error: expect.any(String),
    });
  });
});
