import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PendingUpload } from "../../lib/knowledge/uploads/uploads.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

/**
 * Presigned uploads through the whole local runtime, whose S3 checks a form's policy as AWS does:
 * a form is good for its own key, length and type only, so one workspace's form cannot write
 * another workspace's upload, and what S3 refuses never reaches the uploads queue.
 */

let rt: TestRuntime;
beforeAll(async () => {
  rt = await startTestRuntime();
});
afterAll(() => rt?.close());

const ALICE = "Alice's roadmap: the Falcon launch moves to September.";
// As long as Alice's text, so a form for one takes the other's length.
const BOB = "Bob's pricing note: the Harbor plan is forty dollars.".padEnd(ALICE.length, ".");

async function startUpload(name: string, key: string): Promise<PendingUpload> {
  const res = await rt.call("/api/knowledge/uploads", {
    method: "POST",
    key,
    json: { filename: name, contentType: "text/plain", bytes: ALICE.length },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as PendingUpload;
}

/** What a browser does with a form: its fields in order, then the file; S3's status. */
async function post(upload: PendingUpload, file: string, fields = upload.fields) {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  body.append("file", new Blob([file]), "notes.txt");
  const res = await fetch(upload.uploadUrl, { method: "POST", body });
  await res.text();
  await rt.runtime.queues.idle();
  return res.status;
}

const statusOf = async (id: string, key: string) =>
  ((await (await rt.call(`/api/knowledge/${id}`, { key })).json()) as { status: string }).status;

async function found(query: string, key: string): Promise<string[]> {
  const res = await rt.call("/api/knowledge/search", { method: "POST", key, json: { query } });
  expect(res.status).toBe(200);
  const { results } = (await res.json()) as { results: Array<{ source_id: string }> };
  return results.map((r) => r.source_id);
}

describe("presigned uploads on the local runtime", () => {
  it("refuses one workspace's form for another workspace's key; each indexes only its own file", async () => {
    const alice = await startUpload("roadmap.txt", rt.key);
    const bob = await startUpload("pricing.txt", rt.otherKey);

    // Alice's signed form, with Bob's key put in: the policy names Alice's key only.
    expect(await post(alice, ALICE, { ...alice.fields, key: bob.fields.key ?? "" })).toBe(403);
    expect(await statusOf(bob.id, rt.otherKey)).toBe("awaiting_upload");
    expect(await found("Falcon launch September", rt.otherKey)).toEqual([]);

    expect(await post(bob, BOB)).toBe(204);
    expect(await post(alice, ALICE)).toBe(204);
    expect(await statusOf(bob.id, rt.otherKey)).toBe("indexed");
    expect(await found("Harbor plan forty dollars", rt.otherKey)).toEqual([bob.id]);
    expect(await found("Falcon launch September", rt.otherKey)).toEqual([]);
    expect(await found("Falcon launch September", rt.key)).toEqual([alice.id]);
  });

  it("refuses a file longer than the form declared, and keeps the upload waiting", async () => {
    const upload = await startUpload("long.txt", rt.key);
    expect(await post(upload, `${ALICE} and more`)).toBe(400);
    expect(await statusOf(upload.id, rt.key)).toBe("awaiting_upload");
  });
});
