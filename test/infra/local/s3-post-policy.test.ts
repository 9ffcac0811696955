import { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Emulator, startS3 } from "../../../infra/local/emulators.js";
import { Blobs } from "../../../lib/store/blobs.js";
import { type PresignedPost, presignPost } from "../../../lib/store/presigned-post.js";

/**
 * The local S3 checks a browser-based upload (a presigned POST) as S3 does, in front of s3rver,
 * which does not: the policy's signature, its expiration and every condition. What it refuses is
 * answered with S3's error and never stored.
 */

const BUCKET = "policy-bucket";
let s3: Emulator;
let blobs: Blobs;

/** Blobs over the emulator, signing as the given key with a clock `offsetMs` off. */
const blobsAs = (secretAccessKey = "S3RVER", offsetMs = 0, accessKeyId = "S3RVER") =>
  new Blobs(
    new S3Client({
      endpoint: s3.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId, secretAccessKey },
      forcePathStyle: true,
      systemClockOffset: offsetMs,
    }),
    BUCKET,
  );

beforeAll(async () => {
  s3 = await startS3(undefined, [BUCKET]);
  blobs = blobsAs();
});
afterAll(() => s3.close());

let uploads = 0;
/** A form for a new key that takes `bytes` bytes of text/plain, made by `signer`. */
async function form(bytes: number, signer = blobs) {
  const key = `uploads/form-${++uploads}/upload`;
  const made = await presignPost(signer, key, {
    bytes,
    contentType: "text/plain",
    expiresInSeconds: 600,
  });
  return { key, ...made };
}

/** What a browser does with a form: its fields in order (and `more`), then the file. */
async function post(
  upload: PresignedPost,
  file: string,
  fields = upload.fields,
  more: Array<[string, string]> = [],
) {
  const body = new FormData();
  for (const [name, value] of [...Object.entries(fields), ...more]) body.append(name, value);
  body.append("file", new Blob([file]), "notes.txt");
  const res = await fetch(upload.url, { method: "POST", body });
  const text = await res.text();
  return { status: res.status, code: /<Code>(.*?)<\/Code>/.exec(text)?.[1], text };
}

const TEXT = "twenty bytes of text";

describe("a presigned POST to the local S3", () => {
  it("stores a file that keeps to its form", async () => {
    const upload = await form(TEXT.length);
    expect(await post(upload, TEXT)).toMatchObject({ status: 204 });
    expect(await blobs.getText(upload.key)).toBe(TEXT);
  });

  it("refuses the form with another key, storing nothing under either", async () => {
    const mine = await form(TEXT.length);
    const theirs = await form(TEXT.length);
    const answer = await post(mine, TEXT, { ...mine.fields, key: theirs.key });
    expect(answer).toMatchObject({ status: 403, code: "AccessDenied" });
    expect(answer.text).toContain(`Policy Condition failed: [&#34;eq&#34;, &#34;$key&#34;`);
    // Its own key first, then theirs: a field given twice is refused, not read either way.
    const twice = await post(mine, TEXT, mine.fields, [["key", theirs.key]]);
    expect(twice).toMatchObject({ status: 400, code: "InvalidArgument" });
    expect(await blobs.exists(theirs.key)).toBe(false);
    expect(await blobs.exists(mine.key)).toBe(false);
  });

  it("refuses a form past its expiration", async () => {
    // Signed two hours ago for ten minutes.
    const upload = await form(TEXT.length, blobsAs("S3RVER", -2 * 3600_000));
    const answer = await post(upload, TEXT);
    expect(answer).toMatchObject({ status: 403, code: "AccessDenied" });
    expect(answer.text).toContain("Policy expired.");
    expect(await blobs.exists(upload.key)).toBe(false);
  });

  it("refuses a file larger or smaller than the policy's length range", async () => {
    const upload = await form(TEXT.length);
    const larger = await post(upload, `${TEXT}!`);
    expect(larger).toMatchObject({ status: 400, code: "EntityTooLarge" });
    expect(larger.text).toContain(`<ProposedSize>${TEXT.length + 1}</ProposedSize>`);
    expect(await post(upload, TEXT.slice(1))).toMatchObject({
      status: 400,
      code: "EntityTooSmall",
    });
    expect(await blobs.exists(upload.key)).toBe(false);
  });

  it("refuses another Content-Type than the form's", async () => {
    const upload = await form(TEXT.length);
    const answer = await post(upload, TEXT, { ...upload.fields, "Content-Type": "text/html" });
    expect(answer).toMatchObject({ status: 403, code: "AccessDenied" });
    expect(await blobs.exists(upload.key)).toBe(false);
  });

  it("refuses a policy changed after signing, or signed with a key it does not know", async () => {
    const upload = await form(TEXT.length);
    const policy = Buffer.from(upload.fields.Policy ?? "", "base64").toString("utf8");
    const changed = Buffer.from(
      policy.replace(/"expiration":"[^"]+"/, '"expiration":"2099-01-01T00:00:00Z"'),
    );
    expect(changed.toString()).not.toBe(policy);
    expect(
      await post(upload, TEXT, { ...upload.fields, Policy: changed.toString("base64") }),
    ).toMatchObject({ status: 403, code: "SignatureDoesNotMatch" });
    expect(await post(await form(TEXT.length, blobsAs("not-the-secret")), TEXT)).toMatchObject({
      status: 403,
      code: "SignatureDoesNotMatch",
    });
    expect(
      await post(await form(TEXT.length, blobsAs("S3RVER", 0, "SOMEONE")), TEXT),
    ).toMatchObject({ status: 403, code: "InvalidAccessKeyId" });
    expect(await blobs.exists(upload.key)).toBe(false);
  });

  it("refuses fields the policy does not name, and a form without a policy", async () => {
    const upload = await form(TEXT.length);
    const extra = await post(upload, TEXT, { ...upload.fields, "x-amz-meta-owner": "me" });
    expect(extra).toMatchObject({ status: 403, code: "AccessDenied" });
    expect(extra.text).toContain("Extra input fields: x-amz-meta-owner");
    const { Policy: _policy, ...anonymous } = upload.fields;
    expect(await post(upload, TEXT, anonymous)).toMatchObject({
      status: 403,
      code: "AccessDenied",
    });
    // What S3 ignores does not count: fields after the file, and x-ignore- ones.
    expect(await post(upload, TEXT, { ...upload.fields, "x-ignore-note": "x" })).toMatchObject({
      status: 204,
    });
  });

  it("passes every other request through to the bucket", async () => {
    await blobs.put("plain/a.txt", "a", "text/plain");
    await blobs.put("plain/b.txt", "b", "text/plain");
    expect(await blobs.list("plain/")).toEqual(["plain/a.txt", "plain/b.txt"]);
    await blobs.delete(["plain/a.txt", "plain/b.txt"]);
    expect(await blobs.list("plain/")).toEqual([]);
  });
});
