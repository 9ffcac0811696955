import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileLoader } from "../../lib/knowledge/indexing/file-loader.js";
import type { Indexer, IndexOutcome } from "../../lib/knowledge/indexing/indexer.js";
import type { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { type Sources, sourceBlobPrefix } from "../../lib/knowledge/sources/sources.js";
import { createFileSource, MULTIPART_MAX_BYTES } from "../../lib/knowledge/uploads/multipart.js";
import type { Delivery, IndexMessage } from "../../lib/store/queue.js";
import {
  docxBytes,
  encryptedPdf,
  imageOnlyPdf,
  pdfBytes,
  zipBomb,
} from "../files/support/documents.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";

/**
 * Multipart file sources from the API's side: stored, recorded, indexed by the file loader in
 * the real parser thread, then found by search with their page or heading; hostile files fail
 * their own source with a clear error.
 */

const WS = "ws_01JD0000000000000000000101";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };

let aws: TestAws;
let sources: Sources;
let indexer: Indexer;
let retriever: IndexRetriever;

beforeAll(async () => {
  aws = await startAws();
  sources = sourcesOn(aws);
  indexer = indexerOn(
    aws,
    { file: fileLoader(aws.blobs, { limits: { maxBytes: 1024 * 1024 } }) },
    { size: 400, overlap: 50 },
  );
  retriever = retrieverOn(aws);
});
afterAll(() => aws.close());

const fileOf = (name: string, bytes: Uint8Array | string, type = "") =>
  new File([typeof bytes === "string" ? bytes : new Uint8Array(bytes)], name, { type });

/** Creates a source from a multipart file and runs the index message it queued. */
async function upload(file: File, name?: string): Promise<{ id: string; outcome: IndexOutcome }> {
  const { source, bytes } = await createFileSource({ sources, blobs: aws.blobs }, WS, file, {
    name,
  });
  expect(bytes).toBe(file.size);
  const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
  expect(message.sourceId).toBe(source.id);
  return { id: source.id, outcome: await indexer.handle(message, once) };
}

async function failure(id: string) {
  const { status, error_code, last_error } = await sources.get(WS, id);
  return { status, error_code, last_error };
}

describe("file sources from multipart bodies", () => {
  it("stores the file under the workspace and records a file source named after it", async () => {
    const { source } = await createFileSource(
      { sources, blobs: aws.blobs },
      WS,
      fileOf("C:\\Users\\me\\Q3 notes.txt", "Quarterly notes", "text/plain"),
    );
    expect(source).toMatchObject({
      type: "file",
      status: "indexing",
      name: "Q3 notes.txt",
      source_url_or_path: "Q3 notes.txt",
      content_key: `${sourceBlobPrefix(WS, source.id)}file`,
    });
    expect(await aws.blobs.getText(source.content_key ?? "")).toBe("Quarterly notes");
  });

  it("indexes a two-page PDF and finds text by page and heading", async () => {
    const pdf = await pdfBytes([
      { heading: "Pricing", lines: ["The starter plan costs ten euros a month."] },
      { lines: ["Enterprise customers get single sign-on."] },
    ]);
    const { id, outcome } = await upload(
      fileOf("pricing.pdf", pdf, "application/pdf"),
      "Price list",
    );
    expect(outcome).toBe("indexed");
    expect(await retriever.search(WS, "single sign-on", 1)).toMatchObject([
      { source_id: id, page: 2, name: "Price list", source_url_or_path: "pricing.pdf" },
    ]);
    expect(await retriever.search(WS, "starter plan", 1)).toMatchObject([
      { source_id: id, page: 1, heading: "Pricing" },
    ]);
  });

  it("indexes a Word document with its headings and table rows", async () => {
    const { id, outcome } = await upload(fileOf("handbook.docx", await docxBytes()));
    expect(outcome).toBe("indexed");
    expect(await retriever.search(WS, "Grace Hopper", 1)).toMatchObject([
      {
        source_id: id,
        heading: "Product Handbook > Leadership",
        text: expect.stringContaining("Name: Grace Hopper; Role: VP Engineering"),
        page: null,
      },
    ]);
  });

  it("indexes CSV rows as records, Markdown sections and non-Latin text", async () => {
    const csv = await upload(
      fileOf("accounts.csv", "Account,Owner\nAcme Corp,Lin\nGlobex,Ngozi\n"),
    );
    const md = await upload(fileOf("faq.md", "# FAQ\n\n## Refunds\nRefunds take five days."));
    const ja = await upload(fileOf("東京.txt", "東京の新しいオフィスは四月に開きます。"));
    expect([csv.outcome, md.outcome, ja.outcome]).toEqual(["indexed", "indexed", "indexed"]);
    expect(await retriever.search(WS, "Globex", 1)).toMatchObject([
      { source_id: csv.id, text: expect.stringContaining("Account: Globex; Owner: Ngozi") },
    ]);
    expect(await retriever.search(WS, "refunds", 1)).toMatchObject([
      { source_id: md.id, heading: "FAQ > Refunds" },
    ]);
    expect(await retriever.search(WS, "オフィス", 1)).toMatchObject([
      { source_id: ja.id, source_url_or_path: "東京.txt" },
    ]);
  });

  it("re-parses the stored file on reindex and removes it on delete", async () => {
    const { id } = await upload(fileOf("again.md", "# Again\nStill here."));
    const reindexed = await sources.reindex(WS, id);
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    expect(message.revision).toBe(reindexed.revision);
    expect(await indexer.handle(message, once)).toBe("indexed");
    await sources.delete(WS, id);
    expect(await aws.blobs.list(sourceBlobPrefix(WS, id))).toEqual([]);
  });
});

describe("hostile and unusable files fail their own source", () => {
  it("a password-protected PDF", async () => {
    const { id, outcome } = await upload(fileOf("locked.pdf", await encryptedPdf()));
    expect(outcome).toBe("failed");
    expect(await failure(id)).toMatchObject({
      status: "failed",
      error_code: "encrypted",
      last_error: expect.stringContaining("password"),
    });
  });

  it("a scanned PDF without a text layer", async () => {
    const { id } = await upload(fileOf("scan.pdf", await imageOnlyPdf()));
    expect(await failure(id)).toMatchObject({ error_code: "no_text_layer" });
  });

  it("a truncated PDF", async () => {
    const pdf = await pdfBytes([{ lines: ["cut"] }]);
    const { id } = await upload(fileOf("cut.pdf", pdf.slice(0, pdf.length / 2)));
    expect(await failure(id)).toMatchObject({ error_code: "corrupt" });
  });

  it("a PDF named .docx", async () => {
    const { id } = await upload(fileOf("report.docx", await pdfBytes([{ lines: ["x"] }])));
    expect(await failure(id)).toMatchObject({
      error_code: "type_mismatch",
      last_error: "The file is declared as a Word document (.docx) but holds a PDF document",
    });
  });

  it("an HTML page nested thousands of elements deep", async () => {
    const deep = `<html><body>${"<div>".repeat(5_000)}<p>Buried text.</p></body></html>`;
    const { id, outcome } = await upload(fileOf("deep.html", deep, "text/html"));
    expect(outcome).toBe("failed");
    expect(await failure(id)).toMatchObject({
      status: "failed",
      error_code: "too_complex",
      last_error: "The page nests elements more than 256 levels deep",
    });
  });

  it("a zip bomb named .docx", async () => {
    const bomb = zipBomb();
    expect(bomb.length).toBeLessThan(MULTIPART_MAX_BYTES);
    const { id } = await upload(fileOf("bomb.docx", bomb));
    expect(await failure(id)).toMatchObject({
      error_code: "too_large",
      last_error: "The document expands to more than 256 MB when unpacked",
    });
  });

  it("an empty stored object, and one larger than the parse limit, without downloading it", async () => {
    const emptySource = await sources.create(WS, {
      type: "file",
      name: "empty.txt",
      source_url_or_path: "empty.txt",
      content_key: `ws/${WS}/kb/empty/file`,
    });
    await aws.blobs.put(`ws/${WS}/kb/empty/file`, new Uint8Array(), "text/plain");
    const emptyMessage = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    expect(await indexer.handle(emptyMessage, once)).toBe("failed");
    expect(await failure(emptySource.id)).toMatchObject({ error_code: "empty" });

    const bigKey = `ws/${WS}/kb/big/file`;
    await aws.blobs.s3.send(
      new PutObjectCommand({
        Bucket: aws.blobs.bucket,
        Key: bigKey,
        Body: new Uint8Array(2 * 1024 * 1024),
        ContentType: "text/plain",
      }),
    );
    const big = await sources.create(WS, {
      type: "file",
      name: "big.txt",
      source_url_or_path: "big.txt",
      content_key: bigKey,
    });
    const bigMessage = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    expect(await indexer.handle(bigMessage, once)).toBe("failed");
    expect(await failure(big.id)).toMatchObject({
      error_code: "too_large",
      last_error: "The file has 2 MB; files over 1 MB are not parsed",
    });
  });
});

describe("multipart validation before anything is stored", () => {
  const deps = () => ({ sources, blobs: aws.blobs });

  it("answers 413 above the multipart limit, pointing to the presigned upload", async () => {
    const big = fileOf("big.pdf", new Uint8Array(MULTIPART_MAX_BYTES + 1), "application/pdf");
    await expect(createFileSource(deps(), WS, big)).rejects.toMatchObject({
      code: "payload_too_large",
      message: expect.stringContaining("POST /api/knowledge/uploads"),
      details: { limit: MULTIPART_MAX_BYTES, presignedUpload: "POST /api/knowledge/uploads" },
    });
  });

  it("answers 415 for an unsupported type and 400 for an empty or unnamed file", async () => {
    await expect(
      createFileSource(deps(), WS, fileOf("tool.exe", "MZ", "application/x-msdownload")),
    ).rejects.toMatchObject({ code: "unsupported_media_type" });
    await expect(createFileSource(deps(), WS, fileOf("a.txt", ""))).rejects.toMatchObject({
      code: "validation_failed",
    });
    await expect(createFileSource(deps(), WS, fileOf("/", "x"))).rejects.toMatchObject({
      code: "validation_failed",
    });
  });
});
