import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { SQSEvent, SQSRecord } from "aws-lambda";
import { afterEach, describe, expect, it, vi } from "vitest";
import { invocationsOf, MAX_RECURSIVE_INVOCATIONS } from "../../../infra/local/lineage.js";
import { LocalQueues, type RecursiveLoop } from "../../../infra/local/queues.js";
import { logger, scopedFunction } from "../../../lib/log.js";

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

  it("never runs more deliveries of a queue at once than its concurrency", async () => {
    const { queues } = await start();
    let running = 0;
    let most = 0;
    const held: Array<() => void> = [];
    const started: string[] = [];
    queues.create("jobs");
    for (let i = 0; i < 6; i++) queues.send("jobs", `${i}`);
    queues.consume(
      "jobs",
      async ({ Records }) => {
        running++;
        most = Math.max(most, running);
        started.push(Records.map((r) => r.body).join());
        await new Promise<void>((release) => held.push(release));
        running--;
        return { batchItemFailures: [] };
      },
      { batchSize: 1, concurrency: 2 },
    );
    // Two deliveries hold their slots; with every message available, no third one starts.
    await until(() => held.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toHaveLength(2);
    // Each delivery that ends lets exactly one more start.
    held.shift()?.();
    await until(() => started.length === 3);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toHaveLength(3);
    while (started.length < 6 || held.length > 0) {
      held.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await queues.idle();
    expect(most).toBe(2);
    expect(started.sort()).toEqual(["0", "1", "2", "3", "4", "5"]);
  });
});

/** Resolves once `condition` holds, looking again every few milliseconds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("Lambda's recursive loop detection, locally", () => {
  /**
   * A worker that sends a message on for each one it gets, through the AWS SDK as a function
   * does: to `next` (its own queue unless given), SendMessage and SendMessageBatch in turn.
   */
  function relay(
    queues: LocalQueues,
    sqs: SQSClient,
    seen: SQSRecord[],
    options: { next?: string; until?: number } = {},
  ) {
    return async ({ Records }: SQSEvent) => {
      for (const record of Records) {
        seen.push(record);
        const n = Number(record.body);
        if (n >= (options.until ?? Number.POSITIVE_INFINITY)) continue;
        const QueueUrl = queues.url(options.next ?? record.eventSourceARN.split(":").pop() ?? "");
        const MessageBody = `${n + 1}`;
        if (n % 2 === 0) await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody }));
        else {
          await sqs.send(
            new SendMessageBatchCommand({ QueueUrl, Entries: [{ Id: "next", MessageBody }] }),
          );
        }
      }
      return { batchItemFailures: [] };
    };
  }

  const loop = (recursiveLoop: RecursiveLoop) => ({
    functionName: "relay",
    recursiveLoop: () => recursiveLoop,
  });

  it("gives each message the lineage of its sender's chain, one more per invocation", async () => {
    const { queues, sqs } = await start();
    const seen: SQSRecord[] = [];
    queues.create("jobs");
    // Sent from outside any invocation (an API request, a schedule): a chain starts.
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.url("jobs"), MessageBody: "0" }));
    queues.consume("jobs", relay(queues, sqs, seen, { until: 20 }), loop("Allow"));
    await queues.idle();

    expect(seen.map((r) => r.body)).toEqual(Array.from({ length: 21 }, (_, n) => `${n}`));
    expect(seen[0]?.attributes.AWSTraceHeader).toBeUndefined();
    // Message n was sent by the relay's n-th invocation of the chain, through either request.
    expect(seen.map((r) => invocationsOf(r.attributes.AWSTraceHeader, "relay"))).toEqual(
      Array.from({ length: 21 }, (_, n) => n),
    );
    expect(seen[20]?.attributes.AWSTraceHeader).toMatch(/^Root=1-[0-9a-f]{8}-[0-9a-f]{24};/);
    expect(queues.recursion("relay")).toEqual({ longestChain: 21, dropped: 0 });
  });

  it("dead-letters the message that would invoke a function a 17th time, counted and logged", async () => {
    const { queues, sqs } = await start();
    const warnings: Array<{ message: string; fn: string | undefined }> = [];
    vi.spyOn(logger, "warn").mockImplementation((...[message]) => {
      warnings.push({ message: String(message), fn: scopedFunction() });
    });
    const seen: SQSRecord[] = [];
    queues.create("jobs");
    queues.send("jobs", "0");
    // Bounded, so that without the guard the chain ends (at 40) instead of running on.
    queues.consume("jobs", relay(queues, sqs, seen, { until: 40 }), loop("Terminate"));
    await queues.idle();
    vi.restoreAllMocks();

    expect(seen).toHaveLength(MAX_RECURSIVE_INVOCATIONS);
    expect(queues.deadLetters("jobs")).toEqual([
      expect.objectContaining({ body: "16", receiveCount: 0 }),
    ]);
    expect(queues.recursion("relay")).toEqual({ longestChain: 16, dropped: 1 });
    expect(warnings).toEqual([
      { message: expect.stringContaining("RecursiveInvocationsDropped"), fn: "relay" },
    ]);
  });

  it("counts each function's invocations apart: a chain through two runs each 16 times", async () => {
    const { queues, sqs } = await start();
    const pings: SQSRecord[] = [];
    const pongs: SQSRecord[] = [];
    queues.create("ping");
    queues.create("pong");
    queues.consume("ping", relay(queues, sqs, pings, { next: "pong", until: 40 }), {
      functionName: "ping",
    });
    queues.consume("pong", relay(queues, sqs, pongs, { next: "ping", until: 40 }), {
      functionName: "pong",
    });
    queues.send("ping", "0");
    await queues.idle();

    expect(pings).toHaveLength(16);
    expect(pongs).toHaveLength(16);
    // The last pong carries both counts: pong's 16 invocations and ping's 16 before them.
    const last = pongs.at(-1)?.attributes.AWSTraceHeader;
    expect([invocationsOf(last, "ping"), invocationsOf(last, "pong")]).toEqual([16, 15]);
    expect(queues.deadLetters("ping")).toEqual([expect.objectContaining({ body: "32" })]);
    expect(queues.recursion("ping")).toEqual({ longestChain: 16, dropped: 1 });
    expect(queues.recursion("pong")).toEqual({ longestChain: 16, dropped: 0 });
  });

  it("takes a trace header set as the message's AWSTraceHeader system attribute", async () => {
    const { queues, sqs } = await start();
    const seen: SQSRecord[] = [];
    queues.create("jobs");
    queues.consume("jobs", relay(queues, sqs, seen, { until: 0 }), loop("Terminate"));
    const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0;Lineage=1:aaaaaaaa:3";
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queues.url("jobs"),
        MessageBody: "0",
        MessageSystemAttributes: { AWSTraceHeader: { DataType: "String", StringValue: header } },
      }),
    );
    await queues.idle();
    expect(seen[0]?.attributes.AWSTraceHeader).toBe(header);
  });
});
