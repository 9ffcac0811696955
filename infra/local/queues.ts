import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { logger } from "../../lib/log.js";
import { lambdaContext } from "./lambda-context.js";

/**
 * SQS for the local runtime: an endpoint that speaks the SQS JSON protocol (SendMessage,
 * SendMessageBatch, StartMessageMoveTask) so the AWS SDK code of the functions runs unchanged, and
 * a driver that delivers messages to the same worker handlers as SQS-shaped batch events, with
 * retries, partial batch failures, a time limit per delivery and a dead-letter list.
 *
 * With a state file, nothing acknowledged is lost: the endpoint answers a send only once the
 * message is on disk (temporary file, fsync, rename), and a message's receive is counted on disk
 * before it is delivered, so a message that kills the process still reaches its dead-letter list
 * after its attempts. Writes are group commits: changes made while one write runs all go to disk
 * with the next.
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
  /** A delivery that takes longer has failed (the Lambda's timeout); its handler is left behind. */
  timeoutMs: number;
  running: number;
  pending: Message[];
  dead: Message[];
}

export interface ConsumeOptions {
  batchSize?: number;
  concurrency?: number;
  timeoutMs?: number;
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

/** A delivery's time limit when the consumer sets none: the longest a Lambda may run. */
const LAMBDA_MAX_TIMEOUT_MS = 15 * 60_000;

export class LocalQueues {
  private readonly queues = new Map<string, QueueState>();
  private server: Server | undefined;
  private endpoint = "";
  private timer: NodeJS.Timeout | undefined;
  /** The state write under way, and the one that follows it, shared by every change made meanwhile. */
  private writing: Promise<void> | undefined;
  private nextWrite: Promise<void> | undefined;
  /** Closing: no new deliveries. Closed and saved: results of deliveries left behind are not written. */
  private closed = false;
  private saved = false;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(private readonly options: LocalQueuesOptions) {}

  /** Loads saved messages and starts the SQS endpoint; answers its URL. */
  async start(): Promise<string> {
    if (this.options.stateFile) {
      await mkdir(dirname(this.options.stateFile), { recursive: true });
      try {
        const saved = JSON.parse(await readFile(this.options.stateFile, "utf8")) as Record<
          string,
          { pending: Message[]; dead: Message[] }
        >;
        for (const [name, state] of Object.entries(saved)) {
          const queue = this.queue(name);
          queue.dead.push(...state.dead);
          // A message in flight when the process stopped is delivered again, as SQS would, unless
          // that was its last receive (counted before delivery): then it is a dead letter.
          for (const m of state.pending) {
            if (m.receiveCount >= this.options.maxReceiveCount) queue.dead.push(m);
            else queue.pending.push({ ...m, inFlight: false, availableAt: Date.now() });
          }
        }
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    }
    this.server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (part: Buffer) => parts.push(part));
      req.on("end", async () => {
        const [status, body] = await this.call(
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
  consume(name: string, handler: SqsHandler, options: ConsumeOptions = {}) {
    const queue = this.queue(name);
    queue.handler = handler;
    queue.batchSize = options.batchSize ?? 10;
    queue.concurrency = options.concurrency ?? 2;
    queue.timeoutMs = options.timeoutMs ?? LAMBDA_MAX_TIMEOUT_MS;
    this.schedule();
  }

  /** Queues a message; it reaches the disk with the next write (SendMessage waits for that write). */
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

  /** Stops deliveries and the endpoint (answering requests under way), then saves a last time. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await new Promise<void>((resolve) =>
      this.server ? this.server.close(() => resolve()) : resolve(),
    );
    await this.persist().catch(() => undefined);
    this.saved = true;
  }

  private queue(name: string): QueueState {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = {
        batchSize: 10,
        concurrency: 2,
        timeoutMs: LAMBDA_MAX_TIMEOUT_MS,
        running: 0,
        pending: [],
        dead: [],
      };
      this.queues.set(name, queue);
    }
    return queue;
  }

  private isIdle(): boolean {
    return [...this.queues.values()].every(
      (q) => !q.handler || (q.pending.length === 0 && q.running === 0),
    );
  }

  /** Answers one SQS request; a request that changes the queues is answered once that is on disk. */
  private async call(target: string, raw: string): Promise<[number, unknown]> {
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
    let answer: unknown;
    if (action === "SendMessage" && typeof input.MessageBody === "string") {
      const messageId = this.send(name, input.MessageBody, input.DelaySeconds ?? 0);
      answer = { MessageId: messageId, MD5OfMessageBody: md5(input.MessageBody) };
    } else if (action === "SendMessageBatch" && Array.isArray(input.Entries)) {
      const successful = input.Entries.map((e) => ({
        Id: e.Id,
        MessageId: this.send(name, e.MessageBody, e.DelaySeconds ?? 0),
        MD5OfMessageBody: md5(e.MessageBody),
      }));
      answer = { Successful: successful, Failed: [] };
    } else if (action === "StartMessageMoveTask") {
      const moved = this.redrive(name);
      logger.info("dead letters redriven", { queue: name, moved });
      answer = { TaskHandle: randomUUID() };
    }
    if (answer !== undefined) {
      try {
        await this.persist();
      } catch (err) {
        logger.error("queue state could not be saved", { queue: name, error: err });
        return [500, { __type: "com.amazonaws.sqs#InternalError", message: "State not saved" }];
      }
      return [200, answer];
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

  /** After a change: starts what can start, and saves the state without waiting for it. */
  private changed() {
    this.schedule();
    this.persist().catch((err) => logger.error("queue state could not be saved", { error: err }));
  }

  /**
   * Resolves once the state, with every change made before the call, is on disk. A write takes its
   * snapshot when it starts, so a call made while one runs waits for the next, which every such
   * call shares (group commit). Nothing is written once closed.
   */
  private persist(): Promise<void> {
    const file = this.options.stateFile;
    if (!file || this.saved) return Promise.resolve();
    if (this.nextWrite) return this.nextWrite;
    const begin = (): Promise<void> => {
      this.nextWrite = undefined;
      const write = this.write(file).finally(() => {
        if (this.writing === write) this.writing = undefined;
      });
      this.writing = write;
      return write;
    };
    if (!this.writing) return begin();
    this.nextWrite = this.writing.then(begin, begin);
    return this.nextWrite;
  }

  /** Replaces the state file durably: a temporary file written and synced, renamed, the folder synced. */
  private async write(file: string): Promise<void> {
    const state = JSON.stringify(
      Object.fromEntries(
        [...this.queues].map(([name, q]) => [name, { pending: q.pending, dead: q.dead }]),
      ),
    );
    const temporary = `${file}.tmp`;
    const handle = await open(temporary, "w");
    try {
      await handle.writeFile(state);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
    const folder = await open(dirname(file), "r");
    try {
      await folder.sync();
    } finally {
      await folder.close();
    }
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
    let timer: NodeJS.Timeout | undefined;
    try {
      // The receive is counted on disk first: a delivery that kills the process still counts.
      await this.persist();
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Delivery timed out after ${queue.timeoutMs} ms`)),
          queue.timeoutMs,
        );
      });
      const handler = queue.handler as SqsHandler;
      const response = await Promise.race([
        handler({ Records: records }, lambdaContext(name, queue.timeoutMs)),
        timedOut,
      ]);
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      logger.warn("worker batch failed", { queue: name, error: err });
      failed = new Set(batch.map((m) => m.messageId));
    } finally {
      clearTimeout(timer);
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
