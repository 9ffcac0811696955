import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

let rt: TestRuntime;

beforeAll(async () => {
  rt = await startTestRuntime();
});
afterAll(() => rt.close());

const upload = (form: FormData) => rt.call("/api/knowledge", { method: "POST", body: form });
const source = async (id: string) =>
  (await (await rt.call(`/api/knowledge/${id}`)).json()) as { status: string; type: string };
const search = async (query: string) =>
  (
    (await (
      await rt.call("/api/knowledge/search", { method: "POST", json: { query } })
    ).json()) as {
      results: Array<{ source_id: string; heading: string | null }>;
    }
  ).results;

describe("multipart file sources", () => {
  it("stores, parses and indexes an uploaded file", async () => {
    const content = "# Onboarding\nNew customers get a kickoff call within two days.";
    const form = new FormData();
    form.set("file", new File([content], "guide.md", { type: "text/markdown" }));
    form.set("name", "Onboarding guide");
    const res = await upload(form);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: string };
    expect(body).toMatchObject({
      status: "indexing",
      type: "file",
      name: "Onboarding guide",
      bytes: content.length,
    });
    await rt.runtime.queues.idle();
    expect(await source(body.id)).toMatchObject({ status: "indexed", type: "file" });
    expect((await search("kickoff call"))[0]).toMatchObject({
      source_id: body.id,
      heading: "Onboarding",
    });
  });

  it("answers 400 without a file, 415 for other types and 413 past 4 MB", async () => {
    const noFile = new FormData();
    noFile.set("name", "nothing");
    expect((await upload(noFile)).status).toBe(400);

    const binary = new FormData();
    binary.set(
      "file",
      new File([new Uint8Array([0x4d, 0x5a, 0, 1])], "tool.exe", {
        type: "application/x-msdownload",
      }),
    );
    const unsupported = await upload(binary);
    expect(unsupported.status).toBe(415);
    expect(await unsupported.json()).toMatchObject({ error: { code: "unsupported_media_type" } });

    const big = new FormData();
    big.set(
      "file",
      new File([new Uint8Array(5 * 1024 * 1024).fill(97)], "big.txt", { type: "text/plain" }),
    );
    const tooLarge = await upload(big);
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toMatchObject({
      error: {
        code: "payload_too_large",
        details: { presignedUpload: "POST /api/knowledge/uploads" },
      },
    });
  });

  it("refuses multipart bodies on routes that take JSON", async () => {
    const form = new FormData();
    form.set("query", "x");
    const res = await rt.call("/api/knowledge/search", { method: "POST", body: form });
    expect(res.status).toBe(415);
  });
});

describe("presigned uploads", () => {
  it("creates an awaiting source whose upload, once in the bucket, is indexed", async () => {
    const text = "Quarterly review: churn fell to two percent after the loyalty programme.";
    const res = await rt.call("/api/knowledge/uploads", {
      method: "POST",
      json: { filename: "review.txt", contentType: "text/plain", bytes: Buffer.byteLength(text) },
    });
    expect(res.status).toBe(200);
    const pending = (await res.json()) as {
      id: string;
      uploadUrl: string;
      fields: Record<string, string>;
      method: string;
    };
    expect(pending.method).toBe("POST");
    expect(await source(pending.id)).toMatchObject({ status: "awaiting_upload" });
    const early = await rt.call(`/api/knowledge/${pending.id}/reindex`, { method: "POST" });
    expect(early.status).toBe(409);

    const form = new FormData();
    for (const [field, value] of Object.entries(pending.fields)) form.set(field, value);
    form.set("file", new File([text], "review.txt", { type: "text/plain" }));
    const posted = await fetch(pending.uploadUrl, { method: "POST", body: form });
    expect(posted.ok).toBe(true);

    await rt.runtime.queues.idle();
    expect(await source(pending.id)).toMatchObject({ status: "indexed", type: "file" });
    expect((await search("loyalty programme churn"))[0]?.source_id).toBe(pending.id);
  });
});
