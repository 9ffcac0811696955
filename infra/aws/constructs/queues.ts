import { Duration, Validations } from "aws-cdk-lib";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import {
  QUEUES,
  type QueueName,
  queueUrlVariable,
  queueWorkers,
} from "../../../functions/manifest.js";
import { MAX_RECEIVE_COUNT, QUEUE_RETENTION_DAYS } from "../../../lib/config.js";

/** A dead-letter queue is the end of the line: alarmed, redriven by hand. */
export function deadLetterQueueFindings(dlq: Queue) {
  Validations.of(dlq).acknowledge({
    id: "Serverless-SQSRedrivePolicy",
    reason: "A dead-letter queue has none: its messages are alarmed on and redriven by hand.",
  });
}

/**
 * One queue per kind of background work, each with a dead-letter queue. The visibility timeout is
 * six times the consuming worker's timeout (AWS's guidance for Lambda event sources), so a message
 * is never delivered twice while a worker still holds it.
 */
export class WorkQueues extends Construct {
  private readonly queues = new Map<QueueName, { queue: Queue; longestWait: Duration }>();
  readonly deadLetterQueues = new Map<QueueName, Queue>();

  constructor(scope: Construct, id: string) {
    super(scope, id);
    for (const name of QUEUES) {
      const workerTimeout = Math.max(
        30,
        ...queueWorkers.filter((w) => w.queue === name).map((w) => w.timeoutSeconds),
      );
      const dlq = new Queue(this, `${name}-dlq`, {
        retentionPeriod: Duration.days(14),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
      });
      deadLetterQueueFindings(dlq);
      this.deadLetterQueues.set(name, dlq);
      const queue = new Queue(this, name, {
        visibilityTimeout: Duration.seconds(workerTimeout * 6),
        retentionPeriod: Duration.days(QUEUE_RETENTION_DAYS),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        deadLetterQueue: { queue: dlq, maxReceiveCount: MAX_RECEIVE_COUNT },
      });
      const longestWait = Duration.seconds(workerTimeout * 6 * MAX_RECEIVE_COUNT);
      this.queues.set(name, { queue, longestWait });
    }
  }

  /**
   * Every work queue, with how old its oldest message can legitimately get: each delivery used
   * up, its visibility timeout passed (older, and its worker is not keeping up).
   */
  watched(): Array<{ name: QueueName; queue: Queue; longestWait: Duration }> {
    return [...this.queues].map(([name, entry]) => ({ name, ...entry }));
  }

  queue(name: QueueName): Queue {
    const entry = this.queues.get(name);
    if (!entry) throw new Error(`No queue ${name}`);
    return entry.queue;
  }

  /** Every queue's URL under the variable name functions read it from. */
  environment(): Record<string, string> {
    return Object.fromEntries(
      [...this.queues].map(([name, { queue }]) => [queueUrlVariable(name), queue.queueUrl]),
    );
  }
}
