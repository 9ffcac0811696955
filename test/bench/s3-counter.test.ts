import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  readS3Counter,
  requestCost,
  type S3Counter,
  startS3Counter,
  totals,
} from "../../bench/core/s3-counter.js";
import { type Emulator, startS3 } from "../../infra/local/emulators.js";

const BUCKET = "counted";
let emulator: Emulator;
let counter: S3Counter;
let client: S3Client;

beforeAll(async () => {
  emulator = await startS3(undefined, [BUCKET]);
  counter = await startS3Counter(emulator.endpoint);
  client = new S3Client({
    endpoint: counter.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    forcePathStyle: true,
  });
});

afterAll(async () => {
  client.destroy();
  await counter.close();
  await emulator.close();
});

describe("the S3 request counter", () => {
  it("counts each request by kind and by the first segment of its key, with its bytes", async () => {
    const body = "x".repeat(1000);
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: "search/ws/a", Body: body }));
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: "texts/b", Body: "hello" }));
    const whole = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: "search/ws/a" }));
    await whole.Body?.transformToString();
    const ranged = await client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: "search/ws/a", Range: "bytes=0-99" }),
    );
    await ranged.Body?.transformToString();
    await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "search/ws/a" }));
    await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "search/ws/" }));
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "texts/b" }));
    await client.send(
      new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: "search/ws/a" }] } }),
    );

    const tally = counter.tally();
    expect(Object.keys(tally).sort()).toEqual(["search", "texts"]);
    const search = totals(tally, ["search"]);
    expect(search.put).toMatchObject({ requests: 1, bytesSent: 1000 });
    expect(search.get).toMatchObject({ requests: 1, bytesReceived: 1000 });
    expect(search.rangedGet).toMatchObject({ requests: 1, bytesReceived: 100 });
    expect(search.head.requests).toBe(1);
    expect(search.list.requests).toBe(1);
    // The bulk delete is a POST, counted where its key is, as the DELETE that S3 prices it as.
    expect(search.delete.requests).toBe(1);
    expect(search.post.requests).toBe(0);
    const texts = totals(tally, ["texts"]);
    expect(texts.put).toMatchObject({ requests: 1, bytesSent: 5 });
    expect(texts.delete.requests).toBe(1);
  });

  it("prices writes and listings at $0.005 and reads at $0.0004 per 1,000, deletes free", () => {
    const tally = {
      search: {
        put: { requests: 600, bytesSent: 0, bytesReceived: 0 },
        list: { requests: 400, bytesSent: 0, bytesReceived: 0 },
        get: { requests: 1500, bytesSent: 0, bytesReceived: 0 },
        rangedGet: { requests: 400, bytesSent: 0, bytesReceived: 0 },
        head: { requests: 100, bytesSent: 0, bytesReceived: 0 },
        delete: { requests: 9000, bytesSent: 0, bytesReceived: 0 },
      },
    };
    expect(requestCost(totals(tally))).toBeCloseTo(0.005 + 2 * 0.0004, 10);
  });

  it("answers its tally over HTTP and starts again from zero when asked to reset", async () => {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: "search/ws/c", Body: "c" }));
    const read = await readS3Counter(counter.endpoint, true);
    expect(totals(read).put.requests).toBeGreaterThan(0);
    expect(await readS3Counter(counter.endpoint)).toEqual({});
    await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "search/ws/c" }));
    expect(totals(await readS3Counter(counter.endpoint)).head.requests).toBe(1);
  });
});
