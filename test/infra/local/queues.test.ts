import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { LocalQueues } from "../../../infra/local/queues.js";

const MAX_RECEIVE_COUNT = 3;
const open: LocalQueues[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((q) => q.close()));
});

async function start(stateFile?: string) {
  const queues = new LocalQueues({
    maxReceiveCount: MAX_RECEIVE_COUNT,
    retryDelayMs: 5,
    ...(stateFile ? { stateFile } : {}),
  });
  const endpoint = await queues.start();
  open.push(queues);
  const sqs = new SQSClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "x", secretAccessKey: "x" },
  });
  return { queues, sqs };
}

describe("the local SQS endpoint and driver", () => {
  it("takes SendMessage and SendMessageBatch from the AWS SDK and delivers SQS-shaped batches", async () => {
    const { queues, sqs } = await start();
    const events: SQSEvent[] = [];
    const url = queues.create("jobs");
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: '{"n":1}' }));
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: "a", MessageBody: '{"n":2}' },
          { Id: "b", MessageBody: '{"n":3}' },
        ],
      }),
    );
    queues.consume("jobs", async (event) => {
      events.push(event);
      return { batchItemFailures: [] };
    });
    await queues.idle();
    const records = events.flatMap((e) => e.Records);
    expect(records.map((r) => JSON.parse(r.body).n).sort()).toEqual([1, 2, 3]);
    expect(records[0]).toMatchObject({
      eventSource: "aws:sqs",
      attributes: { ApproximateReceiveCount: "1" },
    });
  });

  it("refuses sends to an unknown queue", async () => {
    const { queues, sqs } = await start();
    await expect(
      sqs.send(new SendMessageCommand({ QueueUrl: queues.url("nope"), MessageBody: "x" })),
    ).rejects.toMatchObject({ name: "QueueDoesNotExist" });
  });

  it("redelivers only the failed records of a batch and dead-letters a poison message", async () => {
    const { queues } = await start();
    const seen: Record<string, number> = {};
    queues.create("jobs");
    queues.send("jobs", "good");
    queues.send("jobs", "poison");
    queues.consume("jobs", async (event) => ({
      batchItemFailures: event.Records.filter((r) => {
        seen[r.body] = (seen[r.body] ?? 0) + 1;
        return r.body === "poison";
      }).map((r) => ({ itemIdentifier: r.messageId })),
    }));
    await queues.idle();
    expect(seen).toEqual({ good: 1, poison: 3 });
    expect(queues.deadLetters("jobs")).toEqual([
      expect.objectContaining({ body: "poison", receiveCount: 3 }),
    ]);

    expect(queues.redrive("jobs")).toBe(1);
    await queues.idle();
    expect(seen.poison).toBe(6);
  });

  it("treats a handler that throws as a failure of the whole batch", async () => {
    const { queues } = await start();
    let calls = 0;
    queues.create("jobs");
    queues.send("jobs", "x");
    queues.consume("jobs", async () => {
      calls++;
      if (calls === 1) throw new Error("crash");
      return { batchItemFailures: [] };
    });
    await queues.idle();
    expect(calls).toBe(2);
    expect(queues.deadLetters("jobs")).toEqual([]);
  });

  it("keeps undelivered messages on disk across a restart", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "queues-")), "queues.json");
    const first = await start(file);
    first.queues.create("jobs");
    first.queues.send("jobs", "survivor");
    await first.queues.close();

    const second = await start(file);
    const bodies: string[] = [];
    second.queues.consume("jobs", async (event) => {
      bodies.push(...event.Records.map((r) => r.body));
      return { batchItemFailures: [] };
    });
    await second.queues.idle();
    expect(bodies).toEqual(["survivor"]);
  });

  it("acknowledges a send only once the message is on disk", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "queues-")), "queues.json");
    const { queues, sqs } = await start(file);
    const url = queues.create("jobs");
    const acknowledged = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        if (i % 2 === 0) {
          const sent = await sqs.send(
            new SendMessageCommand({ QueueUrl: url, MessageBody: `${i}` }),
          );
          return [sent.MessageId];
        }
        const sent = await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: url,
            Entries: [{ Id: "a", MessageBody: `${i}` }],
          }),
        );
        return (sent.Successful ?? []).map((m) => m.MessageId);
      }),
    );
    // Read at once, as a process killed right after the last acknowledgement would find it.
    const saved = JSON.parse(readFileSync(file, "utf8")) as {
      jobs: { pending: Array<{ messageId: string }> };
    };
    expect(saved.jobs.pending.map((m) => m.messageId).sort()).toEqual(acknowledged.flat().sort());
  });

  it("fails a delivery that outlives its time limit and dead-letters the message after its attempts", async () => {
    const { queues } = await start();
    const received: string[] = [];
    queues.create("jobs");
    queues.send("jobs", "hangs");
    queues.send("jobs", "works");
    queues.consume(
      "jobs",
      async ({ Records }) => {
        const [record] = Records;
        received.push(`${record?.body} ${record?.attributes.ApproximateReceiveCount}`);
        if (record?.body === "hangs") await new Promise(() => undefined);
        return { batchItemFailures: [] };
      },
      { batchSize: 1, concurrency: 1, timeoutMs: 50 },
    );
    await queues.idle();
    expect(received).toEqual(["hangs 1", "works 1", "hangs 2", "hangs 3"]);
    expect(queues.deadLetters("jobs")).toEqual([
      expect.objectContaining({ body: "hangs", receiveCount: MAX_RECEIVE_COUNT }),
    ]);
  });

  it("ends a crash loop in the dead-letter list: a receive is counted on disk before delivery", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "queues-")), "queues.json");
    const seed = await start(file);
    seed.queues.create("jobs");
    seed.queues.send("jobs", "crash");
    seed.queues.send("jobs", "after");
    await seed.queues.close();

    const run = () =>
      new Promise<{ signal: string | null; stdout: string }>((resolve) => {
        execFile(
          process.execPath,
          ["--import", "tsx", "test/support/crashing-consumer.ts", file],
          { env: { ...process.env, MAX_RECEIVE_COUNT: String(MAX_RECEIVE_COUNT) } },
          (error, stdout) => resolve({ signal: error?.signal ?? null, stdout }),
        );
      });
    const runs = [];
    for (let i = 0; i <= MAX_RECEIVE_COUNT; i++) runs.push(await run());
    expect(runs.map((r) => r.signal)).toEqual(["SIGKILL", "SIGKILL", "SIGKILL", null]);
    expect(runs.at(-1)?.stdout).toBe('delivered after\ndead ["crash"]\n');
  }, 60_000);
});
