import { Duration } from "aws-cdk-lib";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import {
  QUEUES,
  type QueueName,
  queueUrlVariable,
  queueWorkers,
} from "../../../functions/manifest.js";
import { MAX_RECEIVE_COUNT } from "../../../lib/config.js";

/**
 * One queue per kind of background work, each with a dead-letter queue. The visibility timeout is
 * six times the consuming worker's timeout (AWS's guidance for Lambda event sources), so a message
 * is never delivered twice while a worker still holds it.
 */
export class WorkQueues extends Construct {
  private readonly queues = new Map<QueueName, Queue>();
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
      this.deadLetterQueues.set(name, dlq);
      this.queues.set(
        name,
        new Queue(this, name, {
          visibilityTimeout: Duration.seconds(workerTimeout * 6),
          retentionPeriod: Duration.days(4),
          encryption: QueueEncryption.SQS_MANAGED,
          enforceSSL: true,
          deadLetterQueue: { queue: dlq, maxReceiveCount: MAX_RECEIVE_COUNT },
        }),
      );
    }
  }

  queue(name: QueueName): Queue {
    const queue = this.queues.get(name);
    if (!queue) throw new Error(`No queue ${name}`);
    return queue;
  }

  /** Every queue's URL under the variable name functions read it from. */
  environment(): Record<string, string> {
    return Object.fromEntries(
      [...this.queues].map(([name, queue]) => [queueUrlVariable(name), queue.queueUrl]),
    );
  }
}
