import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { z } from "zod";
import { MAX_RECEIVE_COUNT } from "../config.js";
import { correlationId, logger, withLogKeys } from "../log.js";
import { redactError } from "../redact.js";

/**
 * The queues' contracts: one zod schema per queue for the JSON its messages carry. Senders are
 * typed by them (`Queue<T>`), and every worker parses its records with them (`recordHandler`).
 */

/** The index queue: index one revision of a knowledge source (or remove a deleted one's rows). */
export const IndexMessage = z.object({
  kind: z.literal("index"),
  workspaceId: z.string(),
  sourceId: z.string(),
  revision: z.number().int().positive(),
  /** Check an indexed URL source for changes: reindex only when its content changed. */
  refresh: z.boolean().optional(),
  /** Times it was put back because its workspace held all its index slots. */
  deferrals: z.number().int().nonnegative().optional(),
});
export type IndexMessage = z.infer<typeof IndexMessage>;

/** The crawl queue: crawl one page, or check that a running crawl still makes progress. */
export const CrawlMessage = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("crawl-page"),
    workspaceId: z.string(),
    crawlId: z.string(),
    pageKey: z.string(),
    /** Times it was put back because its workspace held all its crawl slots. */
    deferrals: z.number().int().nonnegative().optional(),
  }),
  z.object({ kind: z.literal("crawl-watch"), workspaceId: z.string(), crawlId: z.string() }),
]);
export type CrawlMessage = z.infer<typeof CrawlMessage>;
export type PageMessage = Extract<CrawlMessage, { kind: "crawl-page" }>;

/** The checks queue: one check of one competitor. */
export const CheckMessage = z.object({
  kind: z.literal("competitor-check"),
  workspaceId: z.string().min(1),
  competitorId: z.string().min(1),
  /** When the check was asked for: a competitor checked since then is not checked again. */
  requestedAt: z.iso.datetime(),
  /** Times the check was put back because its workspace held all its check slots. */
  deferrals: z.number().int().nonnegative().optional(),
  /**
   * Epoch ms before which the check does not run: the sweep spreads a night's checks over longer
   * than SQS's 15-minute delay, so a check due later goes round the queue until its time.
   */
  notBefore: z.number().optional(),
});
export type CheckMessage = z.infer<typeof CheckMessage>;

/**
 * The webhooks queue: one attempt to deliver one event to one endpoint. A failed attempt queues
 * the next one as a new message; `notBefore` carries waits longer than SQS's 15-minute delay.
 */
export const WebhookMessage = z.object({
  kind: z.literal("webhook-delivery"),
  workspaceId: z.string().min(1),
  endpointId: z.string().min(1),
  /** The event's id, sent as `webhook-id`: the same on every attempt. */
  eventId: z.string().min(1),
  type: z.string().min(1),
  /** When the event happened: the payload's `timestamp`. */
  occurredAt: z.iso.datetime(),
  data: z.record(z.string(), z.unknown()),
  /** 1 for the first attempt. */
  attempt: z.number().int().positive(),
  /** Epoch ms before which this attempt does not run. */
  notBefore: z.number().optional(),
  /**
   * Times this attempt was put back without connecting: its endpoint busy with another attempt
   * or its circuit open, or its workspace holding all its slots (lib/webhooks/delivery-gate.ts).
   */
  deferrals: z.number().int().nonnegative().optional(),
});
export type WebhookMessage = z.infer<typeof WebhookMessage>;

/**
 * The exports queue: write (the next part of) one workspace export's bundle. A worker that runs
 * out of its time slice sends the same message again to carry on from the export's checkpoint.
 */
export const ExportMessage = z.object({
  kind: z.literal("export"),
  workspaceId: z.string().min(1),
  exportId: z.string().min(1),
});
export type ExportMessage = z.infer<typeof ExportMessage>;

/**
 * The uploads queue: the bucket's event notifications, `{"Records": [...]}`, or the
 * `s3:TestEvent` S3 sends once when the notification is configured. The local runtime forwards
 * s3rver's `event` payloads, which have the same shape.
 */
export const UploadEvent = z.union([
  z.object({ Event: z.literal("s3:TestEvent") }),
  z.object({
    Records: z.array(
      z.object({
        eventName: z.string(),
        s3: z.object({ object: z.object({ key: z.string() }) }),
      }),
    ),
  }),
]);
export type UploadEvent = z.infer<typeof UploadEvent>;

/**
 * What a message of any queue may carry beside its contract's fields: the correlation id of the
 * work that sent it, so a worker's log lines join those of the API request that started the work.
 * Optional both ways: messages sent before it existed, and S3's notifications, have none, and a
 * worker that does not know it ignores it (contracts drop unknown fields).
 */
export const Envelope = z.object({ correlationId: z.string().min(1).max(200).optional() });
export type Envelope = z.infer<typeof Envelope>;

/** Sends JSON messages of one contract to one SQS queue, with the sender's correlation id. */
export class Queue<T> {
  constructor(
    readonly sqs: SQSClient,
    readonly url: string,
  ) {}

  async send(message: T, delaySeconds = 0): Promise<void> {
    await this.sqs.send(
      new SendMessageCommand({ QueueUrl: this.url, ...entry(message, delaySeconds) }),
    );
  }

  /**
   * Sends many messages, ten to a request (SQS's most), each after its delay in `delaySeconds`
   * (by position; none: at once); throws when any of them was not taken, naming why.
   */
  async sendAll(messages: T[], delaySeconds: number[] = []): Promise<void> {
    for (let at = 0; at < messages.length; at += SQS_BATCH) {
      const entries = messages
        .slice(at, at + SQS_BATCH)
        .map((message, i) => ({ Id: String(i), ...entry(message, delaySeconds[at + i]) }));
      const { Failed = [] } = await this.sqs.send(
        new SendMessageBatchCommand({ QueueUrl: this.url, Entries: entries }),
      );
      if (Failed.length > 0) {
        const reasons = [...new Set(Failed.map((f) => f.Code ?? f.Message))].join(", ");
        throw new Error(
          `${Failed.length} of ${entries.length} messages were not sent (${reasons})`,
        );
      }
    }
  }
}

/**
 * A message's body, with the sender's correlation id, and its delay. A message of a workspace
 * carries the workspace as its MessageGroupId: on a standard queue that makes SQS a fair queue,
 * which delivers a quiet workspace's messages before those of one holding a large share of the
 * consumers (docs/operations.md#capacity); the local queues do the same.
 */
function entry<T>(message: T, delaySeconds = 0) {
  const envelope: Envelope = { correlationId: correlationId() };
  const workspaceId = (message as { workspaceId?: unknown }).workspaceId;
  return {
    MessageBody: JSON.stringify({ ...message, ...envelope }),
    ...(delaySeconds > 0 ? { DelaySeconds: Math.min(900, Math.ceil(delaySeconds)) } : {}),
    ...(typeof workspaceId === "string" ? { MessageGroupId: workspaceId } : {}),
  };
}

/** Messages in one SendMessageBatch request, at most. */
const SQS_BATCH = 10;

/** How a message arrived: a worker can tell its last delivery before the dead-letter queue. */
export interface Delivery {
  /** How often this message has been received, this time included. */
  receiveCount: number;
  /** Deliveries before the message goes to the dead-letter queue. */
  maxReceiveCount: number;
}

/** What a worker reads of an SQS record (an `SQSRecord` of aws-lambda is one). */
export interface QueueRecord {
  /** SQS's id of the message: the correlation id of work that arrives without one. */
  messageId?: string;
  body: string;
  attributes: { ApproximateReceiveCount: string };
}

/** A message body read with its queue's contract; throws when it does not hold. */
export const parseMessage = <T>(contract: z.ZodType<T>, body: string): T =>
  contract.parse(JSON.parse(body));

/**
 * The per-record handler of a queue's worker: the record's body parsed with the queue's contract,
 * handed to `handle` as a plain message with how it was delivered. A record that throws fails
 * alone (a partial batch response) and is retried, then dead-lettered. Everything logged while it
 * is handled carries its correlation id, and one line says how it ended.
 */
export function recordHandler<T>(
  contract: z.ZodType<T>,
  handle: (message: T, delivery: Delivery) => Promise<unknown>,
  maxReceiveCount = MAX_RECEIVE_COUNT,
): (record: QueueRecord) => Promise<void> {
  return async (record) => {
    const json: unknown = JSON.parse(record.body);
    const id = Envelope.safeParse(json).data?.correlationId ?? record.messageId;
    const delivery = {
      receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
      maxReceiveCount,
    };
    await withLogKeys(id ? { correlation_id: id } : {}, async () => {
      const started = performance.now();
      const took = () => Math.round(performance.now() - started);
      try {
        const outcome = await handle(contract.parse(json), delivery);
        logger.info("message handled", {
          receiveCount: delivery.receiveCount,
          durationMs: took(),
          ...(typeof outcome === "string" ? { outcome } : {}),
        });
      } catch (err) {
        logger.warn("message failed", {
          receiveCount: delivery.receiveCount,
          durationMs: took(),
          error: redactError(err),
        });
        throw err;
      }
    });
  };
}
