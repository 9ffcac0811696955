import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { multipart, send } from "./probe.js";
import { type Hardened, startHardened } from "./runtime.js";

/**
 * Quotas against hostile use. A request the API refuses does no work, so it must spend no quota:
 * otherwise a client that sends a few wrong files has no upload quota left for the day. And no
 * single request may take more than the whole quota. Each case runs in a fresh workspace whose
 * daily upload quota (1000 bytes) fits one 800-byte file.
 */

let h: Hardened;

beforeAll(async () => {
  h = await startHardened({ env: { QUOTA_UPLOAD_BYTES_PER_DAY: "1000" } });
});
afterAll(() => h.close());

async function freshKey(name: string): Promise<string> {
  const workspace = await h.rt.runtime.keys.createWorkspace(name);
  return (await h.rt.runtime.keys.createKey(workspace.id)).key;
}

async function uploadFile(key: string, filename: string, type: string, bytes: number) {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(bytes).fill(0x61)], { type }), filename);
  const { body, contentType } = await multipart(form);
  return send(h.rt.url, {
    method: "POST",
    path: "/api/knowledge",
    key,
    body,
    headers: { "content-type": contentType },
  });
}

const presign = (key: string, json: object) =>
  h.rt.call("/api/knowledge/uploads", { method: "POST", key, json });

describe("quotas and refused requests", () => {
  it("spends no upload quota on a multipart file it refuses as unsupported (415)", async () => {
    const key = await freshKey("Refused multipart");
    const refused = await uploadFile(key, "setup.exe", "application/x-msdownload", 800);
    expect(refused.status).toBe(415);

    const valid = await uploadFile(key, "notes.txt", "text/plain", 800);
    expect(valid.status, valid.text).toBe(200);
  });

  it("spends no upload quota on a presigned upload it refuses as unsupported (415)", async () => {
    const key = await freshKey("Refused presign");
    const refused = await presign(key, {
      filename: "setup.exe",
      contentType: "application/x-msdownload",
      bytes: 800,
    });
    expect(refused.status).toBe(415);

    const valid = await presign(key, {
      filename: "report.pdf",
      contentType: "application/pdf",
      bytes: 800,
    });
    expect(valid.status, await valid.clone().text()).toBe(200);
  });

  it("refuses a first request of the day that alone is larger than the whole quota", async () => {
    const key = await freshKey("Oversized first");
    const oversized = await presign(key, {
      filename: "report.pdf",
      contentType: "application/pdf",
      bytes: 5000,
    });
    expect(oversized.status, await oversized.clone().text()).toBe(429);
    expect(await oversized.json()).toMatchObject({ error: { code: "quota_exceeded" } });
  });
});
