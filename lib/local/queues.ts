import { createHash, randomUUID } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { logger } from "../log.js";
import { lambdaContext } from "./lambda-context.js";

/**
 * SQS for the local runtime: an endpoint that speaks the SQS JSON protocol (SendMessage,
 * SendMessageBatch) so the AWS SDK code of the functions runs unchanged, and a driver that
 * delivers messages to the same worker handlers as SQS-shaped batch events, with retries,
 * partial batch failures, a dead-letter list, and pending messages kept on disk across restarts.
 */

export type SqsHandler = (
  event: SQSEvent,
  context: Context,
) => Promise<SQSBatchResponse | undefined>;

interface Message {
  messageId: string;
  body: string;
  receiveCount: number;
  sentAt: number;
  availableAt: number;
  inFlight: boolean;
}

interface QueueState {
  handler?: SqsHandler;
  batchSize: number;
  concurrency: number;
  running: number;
  pending: Message[];
  dead: Message[];
}

export interface LocalQueuesOptions {
  /** Where pending and dead messages are kept; in memory only when absent. */
  stateFile?: string;
  maxReceiveCount: number;
  /** Delay before a failed message is delivered again, doubled on each failure (the visibility timeout). */
  retryDelayMs?: number;
  region?: string;
}

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

export class LocalQueues {
  private readonly queues = new Map<string, QueueState>();
  private server: Server | undefined;
  private endpoint = "";
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(private readonly options: LocalQueuesOptions) {}

  /** Loads saved messages and starts the SQS endpoint; answers its URL. */
  async start(): Promise<string> {
    if (this.options.stateFile) {
      try {
        const saved = JSON.parse(await readFile(this.options.stateFile, "utf8")) as Record<
          string,
          { pending: Message[]; dead: Message[] }
        >;
        for (const [name, state] of Object.entries(saved)) {
          const queue = this.queue(name);
          // A message in flight when the process stopped is delivered again, as SQS would.
          queue.pending.push(
            ...state.pending.map((m) => ({ ...m, inFlight: false, availableAt: Date.now() })),
          );
          queue.dead.push(...state.dead);
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    }
    this.server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (part: Buffer) => parts.push(part));
      req.on("end", () => {
        const [status, body] = this.call(
          String(req.headers["x-amz-target"] ?? ""),
          Buffer.concat(parts).toString("utf8"),
        );
        res.writeHead(status, { "content-type": "application/x-amz-json-1.0" });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.schedule();
    return this.endpoint;
  }

  /** The queue URL to give the SDK. */
  url(name: string): string {
    return `${this.endpoint}/000000000000/${name}`;
  }

  /** Declares a queue; its messages wait until a consumer is attached. */
  create(name: string): string {
    this.queue(name);
    return this.url(name);
  }

  /** Bodies of the messages waiting or in flight, oldest first. */
  pending(name: string): string[] {
    return this.queue(name).pending.map((m) => m.body);
  }

  /** Delivers a queue's messages to a worker handler. */
  consume(
    name: string,
    handler: SqsHandler,
    options: { batchSize?: number; concurrency?: number } = {},
  ) {
    const queue = this.queue(name);
    queue.handler = handler;
    queue.batchSize = options.batchSize ?? 10;
    queue.concurrency = options.concurrency ?? 2;
    this.schedule();
  }

  send(name: string, body: string, delaySeconds = 0): string {
    const message: Message = {
      messageId: randomUUID(),
      body,
      receiveCount: 0,
      sentAt: Date.now(),
      availableAt: Date.now() + delaySeconds * 1000,
      inFlight: false,
    };
    this.queue(name).pending.push(message);
    this.changed();
    return message.messageId;
  }

  /** Messages that failed too often, oldest first. */
  deadLetters(name: string): Array<{ messageId: string; body: string; receiveCount: number }> {
    return this.queue(name).dead.map(({ messageId, body, receiveCount }) => ({
      messageId,
      body,
      receiveCount,
    }));
  }

  /** Moves a queue's dead letters back for delivery; answers how many. */
  redrive(name: string): number {
    const queue = this.queue(name);
    const moved = queue.dead.splice(0);
    for (const m of moved) queue.pending.push({ ...m, receiveCount: 0, availableAt: Date.now() });
    this.changed();
    return moved.length;
  }

  /** Resolves once no message is pending or in flight in any consumed queue. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await new Promise<void>((resolve) =>
      this.server ? this.server.close(() => resolve()) : resolve(),
    );
    await this.saving;
  }

  private queue(name: string): QueueState {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = { batchSize: 10, concurrency: 2, running: 0, pending: [], dead: [] };
      this.queues.set(name, queue);
    }
    return queue;
  }

  private isIdle(): boolean {
    return [...this.queues.values()].every(
      (q) => !q.handler || (q.pending.length === 0 && q.running === 0),
    );
  }

  private call(target: string, raw: string): [number, unknown] {
    const action = target.replace(/^AmazonSQS\./, "");
    let input: {
      QueueUrl?: string;
      MessageBody?: string;
      DelaySeconds?: number;
      Entries?: Array<{ Id: string; MessageBody: string; DelaySeconds?: number }>;
      SourceArn?: string;
    };
    try {
      input = JSON.parse(raw);
    } catch {
      return [400, { __type: "com.amazonaws.sqs#InvalidRequest", message: "Malformed JSON" }];
    }
    // Queues are named by URL, dead-letter queues by ARN (`…:{queue}-dlq`).
    const name =
      action === "StartMessageMoveTask"
        ? (input.SourceArn?.split(":").pop() ?? "").replace(/-dlq$/, "")
        : (input.QueueUrl?.split("/").pop() ?? "");
    if (!this.queues.has(name)) {
      return [400, { __type: "com.amazonaws.sqs#QueueDoesNotExist", message: `No queue ${name}` }];
    }
    if (action === "SendMessage" && typeof input.MessageBody === "string") {
      const messageId = this.send(name, input.MessageBody, input.DelaySeconds ?? 0);
      return [200, { MessageId: messageId, MD5OfMessageBody: md5(input.MessageBody) }];
    }
    if (action === "SendMessageBatch" && Array.isArray(input.Entries)) {
      const successful = input.Entries.map((e) => ({
        Id: e.Id,
        MessageId: this.send(name, e.MessageBody, e.DelaySeconds ?? 0),
        MD5OfMessageBody: md5(e.MessageBody),
      }));
      return [200, { Successful: successful, Failed: [] }];
    }
    if (action === "StartMessageMoveTask") {
      const moved = this.redrive(name);
      logger.info("dead letters redriven", { queue: name, moved });
      return [200, { TaskHandle: randomUUID() }];
    }
    return [
      400,
      {
        __type: "com.amazonaws.sqs#UnsupportedOperation",
        message: `${action} is not supported locally`,
      },
    ];
  }

  /** The ARN the local SQS endpoint gives a queue's dead-letter queue. */
  deadLetterArn(name: string): string {
    return `arn:aws:sqs:${this.options.region ?? "us-east-1"}:000000000000:${name}-dlq`;
  }

  private changed() {
    this.schedule();
    if (!this.options.stateFile) return;
    const file = this.options.stateFile;
    this.saving = this.saving.then(async () => {
      const state = Object.fromEntries(
        [...this.queues].map(([name, q]) => [name, { pending: q.pending, dead: q.dead }]),
      );
      await mkdir(dirname(file), { recursive: true });
      await writeFile(`${file}.tmp`, JSON.stringify(state));
      await rename(`${file}.tmp`, file);
    });
  }

  /** Starts every batch that can start now, and sets a timer for the next delayed message. */
  private schedule() {
    if (this.closed || !this.endpoint) return;
    clearTimeout(this.timer);
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [name, queue] of this.queues) {
      if (!queue.handler) continue;
      while (queue.running < queue.concurrency) {
        const ready = queue.pending.filter((m) => !m.inFlight && m.availableAt <= now);
        const batch = ready.slice(0, queue.batchSize);
        if (batch.length === 0) break;
        for (const m of batch) {
          m.inFlight = true;
          m.receiveCount++;
        }
        queue.running++;
        void this.deliver(name, queue, batch);
      }
      for (const m of queue.pending) if (!m.inFlight) next = Math.min(next, m.availableAt);
    }
    if (next !== Number.POSITIVE_INFINITY) {
      this.timer = setTimeout(() => this.schedule(), Math.max(0, next - Date.now()));
    }
    if (this.isIdle()) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async deliver(name: string, queue: QueueState, batch: Message[]) {
    const records: SQSRecord[] = batch.map((m) => ({
      messageId: m.messageId,
      receiptHandle: m.messageId,
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentAt),
        SenderId: "local",
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: md5(m.body),
      eventSource: "aws:sqs",
      eventSourceARN: `arn:aws:sqs:${this.options.region ?? "us-east-1"}:000000000000:${name}`,
      awsRegion: this.options.region ?? "us-east-1",
    }));
    let failed: Set<string>;
    try {
      const response = await (queue.handler as SqsHandler)(
        { Records: records },
        lambdaContext(name),
      );
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      logger.warn("worker batch failed", { queue: name, error: err });
      failed = new Set(batch.map((m) => m.messageId));
    }
    const retryDelay = this.options.retryDelayMs ?? 1000;
    for (const m of batch) {
      m.inFlight = false;
      if (!failed.has(m.messageId)) {
        queue.pending.splice(queue.pending.indexOf(m), 1);
      } else if (m.receiveCount >= this.options.maxReceiveCount) {
        queue.pending.splice(queue.pending.indexOf(m), 1);
        queue.dead.push(m);
        logger.error("message moved to the dead-letter list", {
          queue: name,
          messageId: m.messageId,
        });
      } else {
        m.availableAt = Date.now() + Math.min(60_000, retryDelay * 2 ** (m.receiveCount - 1));
      }
    }
    queue.running--;
    this.changed();
  }
}
