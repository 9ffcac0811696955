import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { Construct } from "constructs";
import { queueWorkers } from "../../functions/manifest.js";
import type { WorkQueues } from "./queues.js";
import { ServiceFunction } from "./service-function.js";
import type { Storage } from "./storage.js";

/**
 * The SQS-triggered workers: partial batch failures reported (one bad message never fails its
 * batch), and concurrency bounded per queue.
 */
export class Workers extends Construct {
  readonly functions = new Map<string, ServiceFunction>();

  constructor(
    scope: Construct,
    id: string,
    props: {
      storage: Storage;
      queues: WorkQueues;
      environment: Record<string, string>;
      bundleDir: (name: string) => string;
    },
  ) {
    super(scope, id);
    for (const spec of queueWorkers) {
      const fn = new ServiceFunction(this, spec.name, {
        bundleDir: props.bundleDir(spec.name),
        timeoutSeconds: spec.timeoutSeconds,
        memoryMb: spec.memoryMb,
        environment: props.environment,
      });
      fn.grantAccess(spec.access, props.storage, props.queues);
      fn.addEventSource(
        new SqsEventSource(props.queues.queue(spec.queue), {
          batchSize: spec.batchSize,
          reportBatchItemFailures: true,
          maxConcurrency: spec.maxConcurrency,
        }),
      );
      this.functions.set(spec.name, fn);
    }
  }
}
