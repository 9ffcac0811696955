import { Rule, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import { Construct } from "constructs";
import { cronOf, scheduledFunctions } from "../../../functions/manifest.js";
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

/** The scheduled functions, each on an EventBridge rule. */
export class Schedules extends Construct {
  constructor(scope: Construct, id: string, context: FunctionContext) {
    super(scope, id);
    for (const spec of scheduledFunctions) {
      const fn = new ServiceFunction(this, spec, context);
      new Rule(this, `${spec.name}-schedule`, {
        schedule: Schedule.expression(eventBridgeCron(cronOf(spec))),
        targets: [new LambdaFunction(fn, { retryAttempts: 2 })],
      });
    }
  }
}
