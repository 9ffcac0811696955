import { Validations } from "aws-cdk-lib";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { Construct } from "constructs";
import { queueWorkers } from "../../../functions/manifest.js";
import { type FunctionContext, ServiceFunction } from "./service-function.js";

/**
 * The SQS-triggered workers: partial batch failures reported (one bad message never fails its
 * batch), and concurrency bounded per queue. Each queue feeds the worker's `live` alias, so a
 * deploy moves the worker's traffic to its new version gradually, as the API functions'.
 */
export class Workers extends Construct {
  readonly functions = new Map<string, ServiceFunction>();

  constructor(scope: Construct, id: string, context: FunctionContext) {
    super(scope, id);
    for (const spec of queueWorkers) {
      const fn = new ServiceFunction(this, spec, context);
      fn.live.addEventSource(
        new SqsEventSource(context.queues.queue(spec.queue), {
          batchSize: spec.batchSize,
          reportBatchItemFailures: true,
          maxConcurrency: spec.maxConcurrency,
        }),
      );
      Validations.of(fn).acknowledge({
        id: "Serverless-LambdaEventSourceMappingDestination",
        reason: "SQS event sources take no on-failure destination; the queue dead-letters.",
      });
      this.functions.set(spec.name, fn);
    }
  }
}
