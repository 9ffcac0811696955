import { randomUUID } from "node:crypto";
import type { ScheduledEvent, ScheduledHandler } from "aws-lambda";
import { Cron } from "croner";
import { logger, withFunctionContext } from "../../lib/log.js";
import { lambdaContext } from "./lambda-context.js";

/**
 * EventBridge schedules for the local runtime: each scheduled handler runs on its cron expression
 * (UTC) with an EventBridge-shaped event; a run still going when the next is due is skipped.
 * Each run is one invocation of the function (`withFunctionContext`), ended by one line.
 */
export class LocalScheduler {
  private readonly jobs: Cron[] = [];

  add(name: string, expression: string, handler: ScheduledHandler): void {
    this.jobs.push(
      new Cron(expression, { timezone: "UTC", protect: true, name }, () => {
        const context = lambdaContext(name);
        return withFunctionContext(context, async () => {
          const started = performance.now();
          let ok = true;
          try {
            await handler(scheduledEvent(name), context, () => undefined);
          } catch (err) {
            ok = false;
            logger.error("scheduled run failed", { schedule: name, error: err });
          }
          const durationMs = Math.round(performance.now() - started);
          logger.info("invocation", { trigger: "schedule", ok, durationMs });
        });
      }),
    );
  }

  stop(): void {
    for (const job of this.jobs.splice(0)) job.stop();
  }
}

export function scheduledEvent(name: string): ScheduledEvent {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: "000000000000",
    time: new Date().toISOString(),
    region: process.env.AWS_REGION ?? "us-east-1",
    resources: [`arn:aws:events:local:000000000000:rule/${name}`],
    detail: {},
  };
}
