import { SendMessageBatchCommand, SQSClient } from "@aws-sdk/client-sqs";
import type { SQSRecord } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { queueWorkers } from "../../../functions/manifest.js";
import { LocalQueues } from "../../../infra/local/queues.js";
import { localConcurrency } from "../../../infra/local/runtime.js";
import { CHECK_CAPACITY } from "../../../lib/competitors/capacity.js";
import { Queue } from "../../../lib/store/queue.js";

const open: LocalQueues[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((q) => q.close()));
});

async function start() {
  const queues = new LocalQueues({ maxReceiveCount: 3, retryDelayMs: 5 });
  const endpoint = await queues.start();
  open.push(queues);
  const sqs = new SQSClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "x", secretAccessKey: "x" },
  });
  return { queues, sqs };
}

/** Sends `count` messages of a tenant in batches of ten, with or without its group. */
async function sendMany(
  sqs: SQSClient,
  url: string,
  tenant: string,
  count: number,
  grouped = true,
) {
  for (let at = 0; at < count; at += 10) {
    const entries = Array.from({ length: Math.min(10, count - at) }, (_, i) => ({
      Id: String(i),
      MessageBody: JSON.stringify({ tenant, n: at + i }),
      ...(grouped ? { MessageGroupId: tenant } : {}),
    }));
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
  }
}

/** Consumes one batch at a time and answers the tenants in the order they were delivered. */
function consumeInOrder(queues: LocalQueues, name: string) {
  const order: SQSRecord[] = [];
  queues.consume(
    name,
    async (event) => {
      order.push(...event.Records);
      return { batchItemFailures: [] };
    },
    { batchSize: 2, concurrency: 1 },
  );
  return order;
}

describe("the local queues as SQS fair queues", () => {
  it("delivers a quiet tenant's messages before the backlog of a tenant that holds the consumers", async () => {
    const { queues, sqs } = await start();
    const url = queues.create("fair");
    await sendMany(sqs, url, "ws_import", 40);
    await sendMany(sqs, url, "ws_quiet", 2);
    const order = consumeInOrder(queues, "fair");
    await queues.idle();
    const tenants = order.map((r) => JSON.parse(r.body).tenant as string);
    expect(tenants).toHaveLength(42);
    // The first batch finds no tenant noisy yet; from then on the import's processing time is
    // all of the queue's, so the quiet tenant's two messages are the very next batch.
    expect(tenants.slice(2, 4)).toEqual(["ws_quiet", "ws_quiet"]);
    expect(order[2]?.attributes).toMatchObject({ MessageGroupId: "ws_quiet" });
  });

  it("delivers in send order without groups, as a queue with one tenant per message", async () => {
    const { queues, sqs } = await start();
    const url = queues.create("unfair");
    await sendMany(sqs, url, "ws_import", 40, false);
    await sendMany(sqs, url, "ws_quiet", 2, false);
    const order = consumeInOrder(queues, "unfair");
    await queues.idle();
    expect(order.slice(-2).map((r) => JSON.parse(r.body).tenant)).toEqual(["ws_quiet", "ws_quiet"]);
  });

  it("gets each workspace's messages their group from the service's queue sender", async () => {
    const { queues, sqs } = await start();
    const queue = new Queue<{ kind: string; workspaceId: string }>(sqs, queues.create("sent"));
    await queue.send({ kind: "index", workspaceId: "ws_a" });
    await queue.sendAll([{ kind: "index", workspaceId: "ws_b" }]);
    const order = consumeInOrder(queues, "sent");
    await queues.idle();
    expect(order.map((r) => r.attributes.MessageGroupId).sort()).toEqual(["ws_a", "ws_b"]);
  });

  it("runs each shared worker locally with 2 or 3 invocations, one more than a smaller share", () => {
    for (const worker of queueWorkers) {
      const invocations = localConcurrency(worker);
      expect(invocations, worker.name).toBeLessThanOrEqual(Math.min(3, worker.maxConcurrency));
      if ((worker.workspaceSlots ?? 3) < 3) {
        expect(invocations, worker.name).toBeGreaterThan(worker.workspaceSlots ?? 1);
      }
    }
    const checks = queueWorkers.find((w) => w.name === "competitor-check-worker");
    expect(checks && localConcurrency(checks)).toBe(CHECK_CAPACITY.workspaceSlots + 1);
  });
});
