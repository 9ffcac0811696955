import { Duration, Validations } from "aws-cdk-lib";
import type { RestApi } from "aws-cdk-lib/aws-apigateway";
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  type Metric,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

export interface MonitoringProps {
  api: RestApi;
  /** Every function of the stack by manifest name. */
  functions: ReadonlyMap<string, LambdaFunction>;
  /** Work queues by name, each with how old its oldest message may legitimately be. */
  workQueues: ReadonlyArray<{ name: string; queue: Queue; longestWait: Duration }>;
  /** Dead-letter queues by what they hold (a work queue's name, or `schedules`). */
  deadLetterQueues: ReadonlyMap<string, Queue>;
  /** Where notifications are e-mailed, if anywhere. */
  alarmEmail: string | undefined;
}

/** API answers over this share 5xx for 10 minutes raise the alarm. */
export const API_5XX_RATE = 0.01;
/** p95 latency over this for 15 minutes raises the alarm (model calls have 20 s; the rest ~1 s). */
export const API_P95_MS = 5_000;

const FIVE_MINUTES = Duration.minutes(5);

/**
 * The service's alarms, all to one SNS topic, and one dashboard. Everything is derived from what
 * it is given (the manifest's functions and queues), so a new queue or function is watched as
 * soon as it exists. Alarm names are stable: `kb-intel <what> <name>`.
 */
export class Monitoring extends Construct {
  readonly topic: Topic;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.topic = new Topic(this, "Alarms", { displayName: "kb-intel alarms", enforceSSL: true });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    Validations.of(this.topic).acknowledge({
      id: "Serverless-SNSRedrivePolicy",
      reason:
        "SNS retries e-mail deliveries; a dead-letter queue for alarm e-mails could itself only " +
        "be alarmed through this topic.",
    });

    for (const [name, dlq] of props.deadLetterQueues) {
      this.alarm(`dead letters ${name}`, {
        metric: dlq.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: "Maximum",
        }),
        threshold: 1,
        description: `Messages in the ${name} dead-letter queue: work that failed every attempt.`,
      });
    }
    for (const { name, queue, longestWait } of props.workQueues) {
      this.alarm(`queue age ${name}`, {
        metric: queue.metricApproximateAgeOfOldestMessage({
          period: FIVE_MINUTES,
          statistic: "Maximum",
        }),
        threshold: longestWait.toSeconds(),
        evaluationPeriods: 2,
        description:
          `The ${name} queue's oldest message is older than every retry allows ` +
          `(${longestWait.toMinutes()} min): its worker is not keeping up or not running.`,
      });
    }
    const api = props.api;
    this.alarm("api 5xx rate", {
      metric: api.metricServerError({ period: FIVE_MINUTES, statistic: "Average" }),
      threshold: API_5XX_RATE,
      evaluationPeriods: 2,
      description: `Over ${API_5XX_RATE * 100}% of API answers are 5xx for 10 minutes.`,
    });
    this.alarm("api p95 latency", {
      metric: api.metricLatency({ period: FIVE_MINUTES, statistic: "p95" }),
      threshold: API_P95_MS,
      evaluationPeriods: 3,
      description: `API p95 latency over ${API_P95_MS} ms for 15 minutes.`,
    });
    for (const [name, fn] of props.functions) {
      this.alarm(`errors ${name}`, {
        metric: fn.metricErrors({ period: FIVE_MINUTES, statistic: "Sum" }),
        threshold: 1,
        description: `${name} failed an invocation (crash, timeout or out of memory).`,
      });
      this.alarm(`throttles ${name}`, {
        metric: fn.metricThrottles({ period: FIVE_MINUTES, statistic: "Sum" }),
        threshold: 1,
        description: `${name} was throttled: the account's or its concurrency limit was reached.`,
      });
    }

    this.dashboard(props);
  }

  private alarm(
    what: string,
    options: {
      metric: IMetric;
      threshold: number;
      evaluationPeriods?: number;
      description: string;
    },
  ): void {
    const alarm = new Alarm(this, what.replaceAll(" ", "-"), {
      alarmName: `kb-intel ${what}`,
      alarmDescription: options.description,
      metric: options.metric,
      threshold: options.threshold,
      evaluationPeriods: options.evaluationPeriods ?? 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No data is no traffic (an idle queue, a function not called), not a failure.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    alarm.addOkAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
  }

  private dashboard(props: MonitoringProps): void {
    const api = props.api;
    const fns = [...props.functions];
    const perFunction = (metric: (fn: LambdaFunction) => Metric) =>
      fns.map(([name, fn]) => metric(fn).with({ label: name }));
    const dashboard = new Dashboard(this, "Dashboard", { dashboardName: "kb-intel" });
    dashboard.addWidgets(
      new AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24, height: 4 }),
    );
    dashboard.addWidgets(
      new GraphWidget({
        title: "API requests and errors",
        left: [
          api.metricCount({ period: FIVE_MINUTES, label: "requests" }),
          api.metricClientError({ period: FIVE_MINUTES, statistic: "Sum", label: "4xx" }),
          api.metricServerError({ period: FIVE_MINUTES, statistic: "Sum", label: "5xx" }),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: "API latency (ms)",
        left: ["p50", "p95", "p99"].map((statistic) =>
          api.metricLatency({ period: FIVE_MINUTES, statistic, label: statistic }),
        ),
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new GraphWidget({
        title: "Queue backlog (messages visible)",
        left: props.workQueues.map(({ name, queue }) =>
          queue.metricApproximateNumberOfMessagesVisible({ label: name }),
        ),
        width: 8,
      }),
      new GraphWidget({
        title: "Oldest message age (s)",
        left: props.workQueues.map(({ name, queue }) =>
          queue.metricApproximateAgeOfOldestMessage({ label: name }),
        ),
        width: 8,
      }),
      new GraphWidget({
        title: "Dead letters",
        left: [...props.deadLetterQueues].map(([name, dlq]) =>
          dlq.metricApproximateNumberOfMessagesVisible({ label: name, statistic: "Maximum" }),
        ),
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new GraphWidget({
        title: "Invocations",
        left: perFunction((fn) => fn.metricInvocations({ period: FIVE_MINUTES })),
        width: 6,
      }),
      new GraphWidget({
        title: "Errors and throttles",
        left: perFunction((fn) => fn.metricErrors({ period: FIVE_MINUTES })),
        right: [
          new MathExpression({
            expression: `SUM([${fns.map((_, i) => `t${i}`).join(",")}])`,
            usingMetrics: Object.fromEntries(
              fns.map(([, fn], i) => [`t${i}`, fn.metricThrottles({ period: FIVE_MINUTES })]),
            ),
            label: "throttles, all functions",
            period: FIVE_MINUTES,
          }),
        ],
        width: 6,
      }),
      new GraphWidget({
        title: "Duration p95 (ms)",
        left: perFunction((fn) => fn.metricDuration({ period: FIVE_MINUTES, statistic: "p95" })),
        width: 6,
      }),
      new GraphWidget({
        title: "Concurrent executions",
        left: perFunction((fn) =>
          fn.metric("ConcurrentExecutions", { period: FIVE_MINUTES, statistic: "Maximum" }),
        ),
        width: 6,
      }),
    );
  }
}
