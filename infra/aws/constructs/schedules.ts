import { Duration, Validations } from "aws-cdk-lib";
import { Rule, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IDestination } from "aws-cdk-lib/aws-lambda";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { cronOf, scheduledFunctions } from "../../../functions/manifest.js";
import { deadLetterQueueFindings } from "./queues.js";
import { type FunctionContext, ServiceFunction } from "./service-function.js";

/**
 * EventBridge's cron has six fields, needs `?` in one of day-of-month and day-of-week, and
 * numbers weekdays 1-7 from Sunday, and writes steps from a start (`0/10`); the manifest's
 * five-field expressions number weekdays 0-6 and may write `*\/10`.
 */
export function eventBridgeCron(expression: string): string {
  const fields = expression
    .trim()
    .split(/\s+/)
    .map((field) => field.replace(/^\*\//, "0/"));
  if (fields.length !== 5) throw new Error(`Expected a five-field cron expression: ${expression}`);
  let [minute, hour, dayOfMonth, month, dayOfWeek] = fields as [
    string,
    string,
    string,
    string,
    string,
  ];
  dayOfWeek = dayOfWeek.replace(/\d+/g, (day) => String((Number(day) % 7) + 1));
  if (dayOfWeek === "*") dayOfWeek = "?";
  else if (dayOfMonth === "*") dayOfMonth = "?";
  return `cron(${minute} ${hour} ${dayOfMonth} ${month} ${dayOfWeek} *)`;
}

/**
 * Where a failed run is kept: sent by the Lambda service with the function's role, which may
 * send there and nowhere else (CDK's own SQS destination also grants queue reads).
 */
function sendFailuresTo(queue: Queue): IDestination {
  return {
    bind: (_scope, fn) => {
      fn.addToRolePolicy(
        new PolicyStatement({ actions: ["sqs:SendMessage"], resources: [queue.queueArn] }),
      );
      return { destination: queue.queueArn };
    },
  };
}

/**
 * The scheduled functions, each on an EventBridge rule. A schedule that cannot be delivered
 * (after 2 retries within an hour) and a run that fails (after Lambda's 2 retries) both end in
 * one dead-letter queue, which is alarmed like the work queues' ones.
 */
export class Schedules extends Construct {
  readonly functions = new Map<string, ServiceFunction>();
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, context: FunctionContext) {
    super(scope, id);
    this.deadLetterQueue = new Queue(this, "failed-runs", {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    deadLetterQueueFindings(this.deadLetterQueue);
    Validations.of(this.deadLetterQueue).acknowledge({
      id: "AwsSolutions-SQS3",
      reason: "It is a dead-letter queue: of the schedules' targets and the runs' failures.",
    });
    for (const spec of scheduledFunctions) {
      const fn = new ServiceFunction(this, spec, context);
      fn.configureAsyncInvoke({
        retryAttempts: 2,
        onFailure: sendFailuresTo(this.deadLetterQueue),
      });
      new Rule(this, `${spec.name}-schedule`, {
        schedule: Schedule.expression(eventBridgeCron(cronOf(spec))),
        targets: [
          new LambdaFunction(fn, {
            retryAttempts: 2,
            maxEventAge: Duration.hours(1),
            deadLetterQueue: this.deadLetterQueue,
          }),
        ],
      });
      this.functions.set(spec.name, fn);
    }
  }
}
