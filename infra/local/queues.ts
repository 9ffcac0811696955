import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { logger, withFunctionContext, withLogKeys } from "../../lib/log.js";
import { lambdaContext } from "./lambda-context.js";
import {
  invocationsOf,
  invocationTrace,
  MAX_RECURSIVE_INVOCATIONS,
  traceInvocations,
  withTraceHeader,
} from "./lineage.js";

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
 *
 * Like Lambda, the driver stops recursive loops (lineage.ts): a message keeps the trace header it
 * was sent with (`X-Amzn-Trace-Id`, SQS's `AWSTraceHeader`), each delivery runs with the trace
 * header of its chain, one invocation longer, and a message whose chain already ran the consuming
 * function MAX_RECURSIVE_INVOCATIONS times goes to the dead-letter list instead of the function,
 * counted as `RecursiveInvocationsDropped`, unless the consumer's RecursiveLoop is Allow.
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
  /** The X-Ray trace header it was sent with: SQS's `AWSTraceHeader`, with the chain's lineage. */
  traceHeader?: string;
  /** Its tenant on a fair queue (SQS's `MessageGroupId`); none: a tenant of its own. */
  groupId?: string;
  /** The order it was queued in: among messages available at once, the oldest goes first. */
  seq?: number;
}

/** Lambda's setting for a function that its own messages invoke again and again. */
export type RecursiveLoop = "Allow" | "Terminate";

interface QueueState {
  handler?: SqsHandler;
  /** The worker function that consumes the queue, as its invocations are named. */
  functionName?: string;
  memoryMb?: number;
  batchSize: number;
  concurrency: number;
  /** A delivery that takes longer has failed (the Lambda's timeout); its handler is left behind. */
  timeoutMs: number;
  recursiveLoop: () => RecursiveLoop;
  running: number;
  /** Every message waiting or in flight, oldest first (what the state file keeps) ... */
  pending: Set<Message>;
  /** ... those not in flight whose time has not come, soonest first (a binary heap) ... */
  delayed: Message[];
  /**
   * ... and those whose time has come, oldest first: a delivery reads these alone, so a night's
   * thousands of delayed messages cost nothing until they are due.
   */
  ready: Message[];
  /** Messages in flight per tenant (`groupOf`). */
  flying: Map<string, number>;
  dead: Message[];
  /** Deliveries ended lately, per message: the fair queue's processing time of each tenant ... */
  processed: Array<{ groupId: string; endedAt: number; ms: number }>;
  /** ... summed per tenant, and in all. */
  processedMs: Map<string, number>;
  processedTotalMs: number;
}

export interface ConsumeOptions {
  batchSize?: number;
  concurrency?: number;
  timeoutMs?: number;
  /** The consuming function's name in the manifest (its invocations' context); the queue's otherwise. */
  functionName?: string;
  memoryMb?: number;
  /**
   * Whether the function may run on in a chain of its own messages past Lambda's limit: asked
   * before each delivery, as Lambda applies a changed setting to the invocations that follow.
   * Terminate (Lambda's default) when absent.
   */
  recursiveLoop?: () => RecursiveLoop;
}

/** For one function: its longest chain of invocations, and the messages Lambda's guard dropped. */
export interface RecursionCount {
  longestChain: number;
  /** Lambda's `RecursiveInvocationsDropped` metric. */
  dropped: number;
}

export interface LocalQueuesOptions {
  /** Where pending and dead messages are kept; in memory only when absent. */
  stateFile?: string;
  maxReceiveCount: number;
  /** Delay before a failed message is delivered again, doubled on each failure (the visibility timeout). */
  retryDelayMs?: number;
  region?: string;
  /**
   * Seconds of the modelled service per second of this process (1, the default: real time). A
   * simulation runs faster: message delays, retry delays, delivery time limits and the fair
   * queue's window all pass this many times sooner.
   */
  timeScale?: number;
  /**
   * The clock messages are delayed and made available by (epoch ms), read at each use: the
   * fairness simulation's virtual one, which it moves once every delivery waits on it. `Date.now`
   * when absent (a test may fake Date). Deliveries' time limits stay on real timers.
   */
  clock?: () => number;
}

/**
 * SQS fair queues, as documented: a tenant (a MessageGroupId) is a noisy neighbour when it holds
 * more than 10% of the messages in flight and at least 30 of them, or more than 10% of the
 * consumers' recent processing time; while one is, the quiet tenants' messages are delivered
 * first, and among noisy tenants the one with the fewest messages in flight goes first. Nothing
 * is dropped or throttled: a noisy tenant's messages wait only while others' are ready.
 */
const FAIR_SHARE = 0.1;
const FAIR_MIN_IN_FLIGHT = 30;
/** How far back "recent" processing time reaches (SQS forgets a tenant after 5 quiet minutes). */
const FAIR_WINDOW_MS = 5 * 60_000;

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

/** The system attributes a sender may set on a message (SQS takes only `AWSTraceHeader`). */
type SystemAttributes = Record<string, { StringValue?: string } | undefined>;

/** A message's trace header: the one its sender set as a system attribute, else the request's. */
const traceHeaderOf = (attributes: SystemAttributes | undefined, requestHeader?: string) =>
  attributes?.AWSTraceHeader?.StringValue ?? requestHeader;

/** The correlation id a worker reads from a message (lib/store/queue.ts): its own, else its id. */
function correlationOf(message: Message): string {
  try {
    const { correlationId } = JSON.parse(message.body) as { correlationId?: unknown };
    if (typeof correlationId === "string") return correlationId;
  } catch {
    // Not JSON: the message's id, as a worker would.
  }
  return message.messageId;
}

/** A delivery's time limit when the consumer sets none: the longest a Lambda may run. */
const LAMBDA_MAX_TIMEOUT_MS = 15 * 60_000;

const terminate = (): RecursiveLoop => "Terminate";

/** A message's tenant on a fair queue: its group, or itself. */
const groupOf = (m: Message) => m.groupId ?? m.messageId;

const sooner = (a: Message, b: Message) =>
  a.availableAt < b.availableAt || (a.availableAt === b.availableAt && (a.seq ?? 0) < (b.seq ?? 0));

function heapPush(heap: Message[], m: Message) {
  heap.push(m);
  for (let i = heap.length - 1; i > 0; ) {
    const parent = (i - 1) >> 1;
    if (!sooner(heap[i] as Message, heap[parent] as Message)) break;
    [heap[i], heap[parent]] = [heap[parent] as Message, heap[i] as Message];
    i = parent;
  }
}

function heapPop(heap: Message[]): Message | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length === 0 || !last) return top;
  heap[0] = last;
  for (let i = 0; ; ) {
    const left = 2 * i + 1;
    const right = left + 1;
    let least = i;
    if (left < heap.length && sooner(heap[left] as Message, heap[least] as Message)) least = left;
    if (right < heap.length && sooner(heap[right] as Message, heap[least] as Message))
      least = right;
    if (least === i) break;
    [heap[i], heap[least]] = [heap[least] as Message, heap[i] as Message];
    i = least;
  }
  return top;
}

/** Puts a message among the ready ones in the order it was queued. */
function insertReady(ready: Message[], m: Message) {
  let low = 0;
  let high = ready.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (((ready[mid] as Message).seq ?? 0) <= (m.seq ?? 0)) low = mid + 1;
    else high = mid;
  }
  ready.splice(low, 0, m);
}

/**
 * A worker's RecursiveLoop from its manifest entry: Allow only when it declares `recursion`
 * (functions/manifest.ts). Read each time it is asked, so a changed entry applies at once.
 */
export const recursiveLoopOf =
  (worker: { recursion?: { allow: true } | undefined }) => (): RecursiveLoop =>
    worker.recursion?.allow ? "Allow" : "Terminate";

export class LocalQueues {
  private readonly queues = new Map<string, QueueState>();
  private server: Server | undefined;
  private endpoint = "";
  private timer: NodeJS.Timeout | undefined;
  /** A schedule is due at the end of this task (`changed`). */
  private scheduling = false;
  /** The next message's place in the order of queueing. */
  private seq = 0;
  /** Each message's chain lengths by function (`chainOf`): a ready message is asked often. */
  private readonly chains = new WeakMap<Message, Map<string, number>>();
  /** The state write under way, and the one that follows it, shared by every change made meanwhile. */
  private writing: Promise<void> | undefined;
  private nextWrite: Promise<void> | undefined;
  /** Closing: no new deliveries. Closed and saved: results of deliveries left behind are not written. */
  private closed = false;
  private saved = false;
  private readonly idleWaiters: Array<() => void> = [];
  private readonly settledWaiters: Array<(next: number | undefined) => void> = [];
  private readonly recursions = new Map<string, RecursionCount>();

  constructor(private readonly options: LocalQueuesOptions) {}

  private get scale(): number {
    return this.options.timeScale ?? 1;
  }

  private now(): number {
    return this.options.clock ? this.options.clock() : Date.now();
  }

  /** Loads saved messages and starts the SQS endpoint; answers its URL. */
  async start(): Promise<string> {
    traceInvocations();
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
            else this.enqueue(queue, { ...m, inFlight: false, availableAt: this.now() });
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
        const traceHeader = req.headers["x-amzn-trace-id"];
        const [status, body] = await this.call(
          String(req.headers["x-amz-target"] ?? ""),
          Buffer.concat(parts).toString("utf8"),
          typeof traceHeader === "string" ? traceHeader : undefined,
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
    return [...this.queue(name).pending].map((m) => m.body);
  }

  /** Delivers a queue's messages to a worker handler. */
  consume(name: string, handler: SqsHandler, options: ConsumeOptions = {}) {
    const queue = this.queue(name);
    queue.handler = handler;
    queue.batchSize = options.batchSize ?? 10;
    queue.concurrency = options.concurrency ?? 2;
    queue.timeoutMs = options.timeoutMs ?? LAMBDA_MAX_TIMEOUT_MS;
    queue.functionName = options.functionName;
    queue.memoryMb = options.memoryMb;
    queue.recursiveLoop = options.recursiveLoop ?? terminate;
    this.schedule();
  }

  /**
   * Queues a message; it reaches the disk with the next write (SendMessage waits for that write).
   * `traceHeader` is the sender's X-Ray trace header; none starts a chain (an API request, a
   * schedule, a bucket notification).
   */
  send(
    name: string,
    body: string,
    delaySeconds = 0,
    traceHeader?: string,
    groupId?: string,
  ): string {
    const message: Message = {
      messageId: randomUUID(),
      body,
      receiveCount: 0,
      sentAt: this.now(),
      availableAt: this.now() + (delaySeconds * 1000) / this.scale,
      inFlight: false,
      ...(traceHeader ? { traceHeader } : {}),
      ...(groupId ? { groupId } : {}),
    };
    this.enqueue(this.queue(name), message);
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
    for (const m of moved) this.enqueue(queue, { ...m, receiveCount: 0, availableAt: this.now() });
    this.changed();
    return moved.length;
  }

  /** Resolves once no message is pending or in flight in any consumed queue. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * For tests that move the clock by hand: resolves once no delivery runs in any consumed queue
   * and none can start, with the time the next delayed message becomes available (undefined: none
   * is left). After the clock moved, `wake` delivers what became available.
   */
  settled(): Promise<number | undefined> {
    if (this.isSettled()) return Promise.resolve(this.nextAvailable(this.now()));
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** Delivers the messages that are available now (after a test moved the clock). */
  wake(): void {
    this.schedule();
  }

  /** When the next delayed message of a consumed queue becomes available, if one waits. */
  nextAvailableAt(): number | undefined {
    return this.nextAvailable(this.now());
  }

  /** A function's longest chain of invocations so far, and the messages its guard dropped. */
  recursion(functionName: string): RecursionCount {
    return { ...(this.recursions.get(functionName) ?? { longestChain: 0, dropped: 0 }) };
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
        recursiveLoop: terminate,
        running: 0,
        pending: new Set(),
        delayed: [],
        ready: [],
        flying: new Map(),
        dead: [],
        processed: [],
        processedMs: new Map(),
        processedTotalMs: 0,
      };
      this.queues.set(name, queue);
    }
    return queue;
  }

  /** Adds a message, last in the order of queueing. */
  private enqueue(queue: QueueState, m: Message) {
    m.seq = this.seq++;
    queue.pending.add(m);
    heapPush(queue.delayed, m);
  }

  /** Moves the delayed messages whose time has come among the ready ones. */
  private release(queue: QueueState, now: number) {
    while (queue.delayed.length > 0 && (queue.delayed[0] as Message).availableAt <= now) {
      insertReady(queue.ready, heapPop(queue.delayed) as Message);
    }
  }

  private isIdle(): boolean {
    return [...this.queues.values()].every(
      (q) => !q.handler || (q.pending.size === 0 && q.running === 0),
    );
  }

  /** No delivery runs and none can start: what is left waits for its time. */
  private isSettled(): boolean {
    const now = this.now();
    return [...this.queues.values()].every((q) => {
      if (!q.handler) return true;
      this.release(q, now);
      return q.running === 0 && q.ready.length === 0;
    });
  }

  /** When the next delayed message of a consumed queue becomes available, if one waits. */
  private nextAvailable(now: number): number | undefined {
    let next = Number.POSITIVE_INFINITY;
    for (const queue of this.queues.values()) {
      if (!queue.handler) continue;
      this.release(queue, now);
      const soonest = queue.delayed[0];
      if (soonest) next = Math.min(next, soonest.availableAt);
    }
    return next === Number.POSITIVE_INFINITY ? undefined : next;
  }

  /** How often a message's chain ran a function: read from its trace header once. */
  private chainOf(m: Message, functionName: string): number {
    let chains = this.chains.get(m);
    if (!chains) {
      chains = new Map();
      this.chains.set(m, chains);
    }
    let count = chains.get(functionName);
    if (count === undefined) {
      count = invocationsOf(m.traceHeader, functionName);
      chains.set(functionName, count);
    }
    return count;
  }

  private recursionOf(functionName: string): RecursionCount {
    let count = this.recursions.get(functionName);
    if (!count) {
      count = { longestChain: 0, dropped: 0 };
      this.recursions.set(functionName, count);
    }
    return count;
  }

  /**
   * Lambda's recursive loop detection: a message whose chain ran the consuming function
   * MAX_RECURSIVE_INVOCATIONS times already is not delivered; it goes to the dead-letter list, as
   * Lambda sends it to the queue's dead-letter queue, counted and logged, unless the function's
   * RecursiveLoop is Allow. Answers whether it dropped any.
   */
  private stopLoops(name: string, queue: QueueState): boolean {
    if (queue.recursiveLoop() === "Allow") return false;
    const functionName = queue.functionName ?? name;
    const looping = queue.ready.filter(
      (m) => this.chainOf(m, functionName) >= MAX_RECURSIVE_INVOCATIONS,
    );
    for (const m of looping) {
      queue.ready.splice(queue.ready.indexOf(m), 1);
      queue.pending.delete(m);
      queue.dead.push(m);
      this.recursionOf(functionName).dropped++;
      withLogKeys({ function_name: functionName }, () =>
        logger.warn("recursive loop stopped: RecursiveInvocationsDropped", {
          metric: "RecursiveInvocationsDropped",
          queue: name,
          messageId: m.messageId,
          invocations: invocationsOf(m.traceHeader, functionName),
        }),
      );
    }
    return looping.length > 0;
  }

  /** Answers one SQS request; a request that changes the queues is answered once that is on disk. */
  private async call(
    target: string,
    raw: string,
    traceHeader: string | undefined,
  ): Promise<[number, unknown]> {
    const action = target.replace(/^AmazonSQS\./, "");
    let input: {
      QueueUrl?: string;
      MessageBody?: string;
      DelaySeconds?: number;
      MessageSystemAttributes?: SystemAttributes;
      MessageGroupId?: string;
      Entries?: Array<{
        Id: string;
        MessageBody: string;
        DelaySeconds?: number;
        MessageSystemAttributes?: SystemAttributes;
        MessageGroupId?: string;
      }>;
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
      const messageId = this.send(
        name,
        input.MessageBody,
        input.DelaySeconds ?? 0,
        traceHeaderOf(input.MessageSystemAttributes, traceHeader),
        input.MessageGroupId,
      );
      answer = { MessageId: messageId, MD5OfMessageBody: md5(input.MessageBody) };
    } else if (action === "SendMessageBatch" && Array.isArray(input.Entries)) {
      const successful = input.Entries.map((e) => ({
        Id: e.Id,
        MessageId: this.send(
          name,
          e.MessageBody,
          e.DelaySeconds ?? 0,
          traceHeaderOf(e.MessageSystemAttributes, traceHeader),
          e.MessageGroupId,
        ),
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

  /**
   * After a change: starts what can start once the changes made meanwhile are in (a batch of ten
   * sends schedules once, not ten times), and saves the state without waiting for it.
   */
  private changed() {
    if (!this.scheduling) {
      this.scheduling = true;
      queueMicrotask(() => {
        this.scheduling = false;
        this.schedule();
      });
    }
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
        [...this.queues].map(([name, q]) => [name, { pending: [...q.pending], dead: q.dead }]),
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
    const now = this.now();
    let dropped = false;
    for (const [name, queue] of this.queues) {
      if (!queue.handler) continue;
      this.release(queue, now);
      if (this.stopLoops(name, queue)) dropped = true;
      while (queue.running < queue.concurrency) {
        const batch = fairBatch(queue, now, this.scale);
        if (batch.length === 0) break;
        for (const m of batch) {
          m.inFlight = true;
          m.receiveCount++;
          queue.flying.set(groupOf(m), (queue.flying.get(groupOf(m)) ?? 0) + 1);
        }
        queue.running++;
        void this.deliver(name, queue, batch);
      }
    }
    if (dropped) {
      this.persist().catch((err) => logger.error("queue state could not be saved", { error: err }));
    }
    // Messages available now wait for a running delivery to end, which schedules again.
    const next = this.nextAvailable(now);
    if (next !== undefined) {
      this.timer = setTimeout(() => this.schedule(), Math.max(0, next - this.now()));
    }
    if (this.isIdle()) for (const resolve of this.idleWaiters.splice(0)) resolve();
    if (this.isSettled()) {
      const after = this.nextAvailable(this.now());
      for (const resolve of this.settledWaiters.splice(0)) resolve(after);
    }
  }

  /**
   * One invocation of the queue's worker with `batch`, as Lambda's event source mapping makes it:
   * everything it logs carries the function's context (`withFunctionContext`), and one line says
   * how it ended (the records, how many failed, how long it took, their correlation ids).
   */
  private deliver(name: string, queue: QueueState, batch: Message[]) {
    const functionName = queue.functionName ?? name;
    const context = lambdaContext(functionName, queue.timeoutMs, queue.memoryMb);
    const trace = invocationTrace(
      batch.map((m) => m.traceHeader),
      functionName,
    );
    const count = this.recursionOf(functionName);
    count.longestChain = Math.max(count.longestChain, trace.invocations);
    return withFunctionContext(context, () =>
      this.invoke(name, queue, batch, context, trace.traceHeader),
    );
  }

  private async invoke(
    name: string,
    queue: QueueState,
    batch: Message[],
    context: Context,
    traceHeader: string,
  ) {
    const started = performance.now();
    const startedAt = this.now();
    const records: SQSRecord[] = batch.map((m) => ({
      messageId: m.messageId,
      receiptHandle: m.messageId,
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentAt),
        SenderId: "local",
        ApproximateFirstReceiveTimestamp: String(this.now()),
        ...(m.traceHeader ? { AWSTraceHeader: m.traceHeader } : {}),
        ...(m.groupId ? { MessageGroupId: m.groupId } : {}),
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
          queue.timeoutMs / this.scale,
        );
      });
      const handler = queue.handler as SqsHandler;
      // The SDK clients of the handler send the invocation's trace header with every request.
      const invoked = withTraceHeader(traceHeader, context.awsRequestId, () =>
        handler({ Records: records }, context),
      );
      const response = await Promise.race([invoked, timedOut]);
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      logger.warn("worker batch failed", { queue: name, error: err });
      failed = new Set(batch.map((m) => m.messageId));
    } finally {
      clearTimeout(timer);
    }
    logger.info("invocation", {
      records: batch.length,
      failed: failed.size,
      durationMs: Math.round(performance.now() - started),
      correlationIds: batch.map((m) => correlationOf(m)),
    });
    const retryDelay = (this.options.retryDelayMs ?? 1000) / this.scale;
    const ended = this.now();
    // The processing time the fair queue weighs, on the clock its messages are delayed by.
    const ms = this.options.clock ? ended - startedAt : (performance.now() - started) * this.scale;
    for (const m of batch) {
      const groupId = groupOf(m);
      queue.processed.push({ groupId, endedAt: ended, ms });
      queue.processedMs.set(groupId, (queue.processedMs.get(groupId) ?? 0) + ms);
      queue.processedTotalMs += ms;
      m.inFlight = false;
      const flying = (queue.flying.get(groupId) ?? 1) - 1;
      if (flying > 0) queue.flying.set(groupId, flying);
      else queue.flying.delete(groupId);
      if (!failed.has(m.messageId)) {
        queue.pending.delete(m);
      } else if (m.receiveCount >= this.options.maxReceiveCount) {
        queue.pending.delete(m);
        queue.dead.push(m);
        logger.error("message moved to the dead-letter list", {
          queue: name,
          messageId: m.messageId,
        });
      } else {
        m.availableAt =
          this.now() + Math.min(60_000 / this.scale, retryDelay * 2 ** (m.receiveCount - 1));
        heapPush(queue.delayed, m);
      }
    }
    queue.running--;
    this.changed();
  }
}

/**
 * The next batch of a queue as a fair queue makes it: the ready messages of quiet tenants first,
 * oldest first, then those of noisy tenants (FAIR_SHARE), the tenant with the fewest messages in
 * flight first. A message without a group is a tenant of its own, as on SQS.
 */
function fairBatch(queue: QueueState, now: number, scale: number): Message[] {
  const ready = queue.ready;
  // All of them fit: the order within a batch changes nothing.
  if (ready.length <= queue.batchSize) {
    queue.ready = [];
    return ready;
  }
  const inFlight = new Map(queue.flying);
  let flying = 0;
  for (const held of inFlight.values()) flying += held;
  const since = now - FAIR_WINDOW_MS / scale;
  for (let old = queue.processed[0]; old && old.endedAt < since; old = queue.processed[0]) {
    queue.processed.shift();
    const left = (queue.processedMs.get(old.groupId) ?? 0) - old.ms;
    if (left > 0) queue.processedMs.set(old.groupId, left);
    else queue.processedMs.delete(old.groupId);
    queue.processedTotalMs -= old.ms;
  }
  const time = queue.processedMs;
  const total = queue.processedTotalMs;
  const noisy = (group: string) => {
    const held = inFlight.get(group) ?? 0;
    return (
      (held >= FAIR_MIN_IN_FLIGHT && held > flying * FAIR_SHARE) ||
      (total > 0 && (time.get(group) ?? 0) > total * FAIR_SHARE)
    );
  };
  const batch: Message[] = [];
  const waiting = new Map<string, Message[]>();
  for (const m of ready) {
    const group = groupOf(m);
    if (!noisy(group)) {
      batch.push(m);
      // Full of quiet tenants' messages: the noisy ones' wait for a later batch.
      if (batch.length === queue.batchSize) break;
    } else {
      const list = waiting.get(group);
      if (list) list.push(m);
      else waiting.set(group, [m]);
    }
  }
  while (batch.length < queue.batchSize && waiting.size > 0) {
    let next: string | undefined;
    for (const group of waiting.keys()) {
      if (next === undefined || (inFlight.get(group) ?? 0) < (inFlight.get(next) ?? 0)) {
        next = group;
      }
    }
    const list = waiting.get(next as string) as Message[];
    batch.push(list.shift() as Message);
    inFlight.set(next as string, (inFlight.get(next as string) ?? 0) + 1);
    if (list.length === 0) waiting.delete(next as string);
  }
  // The batch's messages are mostly near the front: taking them out one by one reads little.
  for (const m of batch) ready.splice(ready.indexOf(m), 1);
  return batch;
}
