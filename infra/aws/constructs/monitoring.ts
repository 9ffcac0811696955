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
  Metric,
  TreatMissingData,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { Table } from "aws-cdk-lib/aws-dynamodb";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import { EmailSubscription } from "aws-cdk-lib/aws-sns-subscriptions";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { TABLE_INDEXES } from "../../../lib/store/schema.js";
import { Firewall } from "./firewall.js";
import type { ServiceFunction } from "./service-function.js";

export interface MonitoringProps {
  /** Start of every name: `kb-intel-<stage>`. */
  prefix: string;
  api: RestApi;
  /** The API's 429s, from its access log. */
  apiThrottled: IMetric;
  firewall: Firewall;
  /** The functions by manifest name, by how they are invoked. */
  apiFunctions: ReadonlyMap<string, ServiceFunction>;
  workers: ReadonlyMap<string, ServiceFunction>;
  scheduled: ReadonlyMap<string, ServiceFunction>;
  table: Table;
  /** Work queues by name, each with how old its oldest message may legitimately be. */
  workQueues: ReadonlyArray<{ name: string; queue: Queue; longestWait: Duration }>;
  /** Dead-letter queues by what they hold (a work queue's name, or `schedules`). */
  deadLetterQueues: ReadonlyMap<string, Queue>;
  /** Where notifications are e-mailed, if anywhere. */
  alarmEmail: string | undefined;
}

/** API answers over this share 5xx for 10 minutes raise the alarm. */
export const API_5XX_RATE = 0.01;
/** 429s answered by the API in 5 minutes that raise the alarm (a client held back for minutes). */
export const API_429_PER_5_MINUTES = 100;

/**
 * p95 duration of each API function that raises its latency alarm after 15 minutes, and that rolls
 * a deploy back. Chat and generations are model calls with a 20 s budget (LLM_TIMEOUT_MS), and a
 * competitor check through the API reads the site for up to 18 s: those functions are slow by
 * nature. The rest answer from the table and the index.
 */
export const API_LATENCY_P95_MS: Record<string, number> = {
  "knowledge-api": 3_000,
  "intel-api": 15_000,
  "competitors-api": 15_000,
};
export const DEFAULT_API_LATENCY_P95_MS = 2_000;
export const apiLatencyP95Ms = (name: string) =>
  API_LATENCY_P95_MS[name] ?? DEFAULT_API_LATENCY_P95_MS;

/** p99 duration over this share of a function's timeout raises its alarm: it is about to time out. */
export const NEAR_TIMEOUT = 0.8;
export const nearTimeoutMs = (fn: LambdaFunction) =>
  Math.round((fn.timeout?.toMilliseconds() ?? 3_000) * NEAR_TIMEOUT);

/**
 * The business metrics the functions write as EMF (lib/metrics.ts: namespace `kb-intel`,
 * dimension `service`), alarmed when most of an hour's work fails: one failure is a bad URL or a
 * site that is down; most of them is the service's own fault (the model, the bucket, the fetcher).
 */
export const BUSINESS = {
  namespace: "kb-intel",
  dimensions: { service: "kb-intel" },
  failing: [
    {
      what: "sources failing",
      work: "sources",
      failed: "SourcesFailed",
      succeeded: "SourcesIndexed",
    },
    {
      what: "competitor checks failing",
      work: "competitor checks",
      failed: "CompetitorChecksFailed",
      succeeded: "CompetitorChecks",
    },
  ],
  /** Share of failures, and the least failures in the hour, that raise the alarm. */
  share: 0.5,
  least: 3,
} as const;

const ONE_MINUTE = Duration.minutes(1);
const FIVE_MINUTES = Duration.minutes(5);

type AlarmOptions = {
  metric: IMetric;
  threshold: number;
  evaluationPeriods?: number;
  datapointsToAlarm?: number;
  comparison?: ComparisonOperator;
  description: string;
};

/**
 * The service's alarms, all to one SNS topic, and one dashboard. Everything is derived from what
 * it is given (the manifest's functions and queues), so a new queue or function is watched as
 * soon as it exists. Alarm names are `kb-intel-<stage> <what> <name>`; docs/operations.md has a
 * runbook line for each.
 */
export class Monitoring extends Construct {
  readonly topic: Topic;
  readonly alarms: Alarm[] = [];
  private readonly prefix: string;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.prefix = props.prefix;
    this.topic = new Topic(this, "Alarms", {
      displayName: `${props.prefix} alarms`,
      enforceSSL: true,
    });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    Validations.of(this.topic).acknowledge({
      id: "Serverless-SNSRedrivePolicy",
      reason:
        "SNS retries e-mail deliveries; a dead-letter queue for alarm e-mails could itself only " +
        "be alarmed through this topic.",
    });

    this.queueAlarms(props);
    this.apiAlarms(props);
    this.functionAlarms(props);
    this.storeAlarms(props);
    this.businessAlarms();
    this.dashboard(props);
  }

  private queueAlarms(props: MonitoringProps): void {
    for (const [name, dlq] of props.deadLetterQueues) {
      // New dead letters, not how many there are: a level would stay in alarm until someone
      // drains the queue, and the next failure would go unnoticed. SQS counts no
      // NumberOfMessagesSent for a message its redrive policy moves, so arrivals are the rise of
      // the visible messages from one minute to the next. FILL: SQS stops the metrics of a queue
      // left alone for 6 hours; a missing minute counts as empty, so the first message after a
      // quiet spell is a rise too (and so is an operator's first look at an old dead letter).
      this.alarm(`dead letters ${name}`, {
        metric: new MathExpression({
          expression: "DIFF(FILL(visible, 0))",
          usingMetrics: {
            visible: dlq.metricApproximateNumberOfMessagesVisible({
              period: ONE_MINUTE,
              statistic: "Maximum",
            }),
          },
          period: ONE_MINUTE,
          label: `new dead letters ${name}`,
        }),
        threshold: 1,
        // Two minutes of data give DIFF one value; one rise is enough.
        evaluationPeriods: 2,
        datapointsToAlarm: 1,
        description: `New messages in the ${name} dead-letter queue: work that failed every attempt.`,
      });
    }
    // A worker held back by its queue's maxConcurrency is never throttled (the event source
    // polls less): what shows it is the age of the oldest message.
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
  }

  private apiAlarms(props: MonitoringProps): void {
    const api = props.api;
    this.alarm("api 5xx rate", {
      metric: api.metricServerError({ period: FIVE_MINUTES, statistic: "Average" }),
      threshold: API_5XX_RATE,
      evaluationPeriods: 2,
      description: `Over ${API_5XX_RATE * 100}% of API answers are 5xx for 10 minutes.`,
    });
    this.alarm("api 429s", {
      metric: props.apiThrottled,
      threshold: API_429_PER_5_MINUTES,
      description:
        `The API answered ${API_429_PER_5_MINUTES} or more 429s in 5 minutes: the stage's ` +
        "throttle, a workspace's rate limit or the firewall's rate rules held callers back.",
    });
    const { perAddress, anonymous } = Firewall.RATE_RULES;
    this.alarm("rate limited address", {
      metric: props.firewall.metricBlocked(perAddress),
      threshold: 1,
      description: "AWS WAF refused an address that sent more than its limit in 5 minutes.",
    });
    this.alarm("rate limited anonymous", {
      metric: props.firewall.metricBlocked(anonymous),
      threshold: 1,
      description:
        "AWS WAF refused an address that sent more requests without an API key than its limit.",
    });
    for (const [name, fn] of props.apiFunctions) {
      const threshold = apiLatencyP95Ms(name);
      this.alarm(`latency ${name}`, {
        metric: fn.metricDuration({ period: FIVE_MINUTES, statistic: "p95" }),
        threshold,
        evaluationPeriods: 3,
        comparison: ComparisonOperator.GREATER_THAN_THRESHOLD,
        description: `${name}'s p95 duration over ${threshold} ms for 15 minutes.`,
      });
    }
  }

  private functionAlarms(props: MonitoringProps): void {
    const all = [...props.apiFunctions, ...props.workers, ...props.scheduled];
    for (const [name, fn] of all) {
      this.alarm(`errors ${name}`, {
        metric: fn.metricErrors({ period: FIVE_MINUTES, statistic: "Sum" }),
        threshold: 1,
        description: `${name} failed an invocation (crash, timeout or out of memory).`,
      });
      const nearTimeout = nearTimeoutMs(fn);
      this.alarm(`near timeout ${name}`, {
        metric: fn.metricDuration({ period: FIVE_MINUTES, statistic: "p99" }),
        threshold: nearTimeout,
        comparison: ComparisonOperator.GREATER_THAN_THRESHOLD,
        description:
          `${name}'s p99 duration is over ${NEAR_TIMEOUT * 100}% of its timeout ` +
          `(${nearTimeout} ms): invocations are about to time out.`,
      });
    }
    // Throttles stop an API or a scheduled function when the account's concurrency is used up.
    for (const [name, fn] of [...props.apiFunctions, ...props.scheduled]) {
      this.alarm(`throttles ${name}`, {
        metric: fn.metricThrottles({ period: FIVE_MINUTES, statistic: "Sum" }),
        threshold: 1,
        description: `${name} was throttled: the account's concurrency limit was reached.`,
      });
    }
    // Lambda stops a loop through a queue after about 16 hops and drops the message. Only the
    // queue-fed functions are in such chains; those whose manifest allows the loop never drop.
    for (const [name, fn] of props.workers) {
      if (fn.spec.recursion?.allow) continue;
      this.alarm(`recursion stopped ${name}`, {
        metric: fn.metric("RecursiveInvocationsDropped", {
          period: FIVE_MINUTES,
          statistic: "Sum",
        }),
        threshold: 1,
        description:
          `Lambda stopped a recursive loop through ${name} and dropped its message: the worker ` +
          "sends to a queue that leads back to itself, which its manifest entry does not declare.",
      });
    }
  }

  private storeAlarms(props: MonitoringProps): void {
    const table = props.table;
    const usingMetrics: Record<string, IMetric> = {};
    const scopes = [undefined, ...TABLE_INDEXES.map((index) => index.name)];
    scopes.forEach((index, i) => {
      for (const kind of ["Read", "Write"]) {
        usingMetrics[`${kind.toLowerCase()}${i}`] = table.metric(`${kind}ThrottleEvents`, {
          period: FIVE_MINUTES,
          statistic: "Sum",
          ...(index
            ? { dimensionsMap: { TableName: table.tableName, GlobalSecondaryIndexName: index } }
            : {}),
        });
      }
    });
    this.alarm("table throttles", {
      metric: new MathExpression({
        expression: `SUM([${Object.keys(usingMetrics)
          .map((id) => `FILL(${id}, 0)`)
          .join(",")}])`,
        usingMetrics,
        period: FIVE_MINUTES,
        label: "throttle events, table and indexes",
      }),
      threshold: 1,
      evaluationPeriods: 2,
      description:
        "DynamoDB throttled reads or writes of the table or an index for 10 minutes (the SDK " +
        "retries them; sustained, requests fail): a hot key or the on-demand table's limits.",
    });
  }

  private businessAlarms(): void {
    const hour = Duration.hours(1);
    const metric = (metricName: string) =>
      new Metric({
        namespace: BUSINESS.namespace,
        metricName,
        dimensionsMap: { ...BUSINESS.dimensions },
        statistic: "Sum",
        period: hour,
      });
    for (const { what, work, failed, succeeded } of BUSINESS.failing) {
      this.alarm(what, {
        metric: new MathExpression({
          expression: `IF(FILL(failed, 0) >= ${BUSINESS.least}, FILL(failed, 0) / (FILL(failed, 0) + FILL(ok, 0)), 0)`,
          usingMetrics: { failed: metric(failed), ok: metric(succeeded) },
          period: hour,
          label: `${failed} share`,
        }),
        threshold: BUSINESS.share,
        comparison: ComparisonOperator.GREATER_THAN_THRESHOLD,
        description:
          `Over ${BUSINESS.share * 100}% of the hour's ${work} failed, ${BUSINESS.least} or ` +
          `more (${failed} against ${succeeded}).`,
      });
    }
  }

  private alarm(what: string, options: AlarmOptions): void {
    const alarm = new Alarm(this, what.replaceAll(" ", "-"), {
      alarmName: `${this.prefix} ${what}`,
      alarmDescription: options.description,
      metric: options.metric,
      threshold: options.threshold,
      evaluationPeriods: options.evaluationPeriods ?? 1,
      ...(options.datapointsToAlarm ? { datapointsToAlarm: options.datapointsToAlarm } : {}),
      comparisonOperator:
        options.comparison ?? ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No data is no traffic (an idle queue, a function not called), not a failure.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    alarm.addOkAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
  }

  private dashboard(props: MonitoringProps): void {
    const api = props.api;
    const fns = [...props.apiFunctions, ...props.workers, ...props.scheduled];
    const perFunction = (metric: (fn: LambdaFunction) => Metric) =>
      fns.map(([name, fn]) => metric(fn).with({ label: name }));
    const dashboard = new Dashboard(this, "Dashboard", { dashboardName: props.prefix });
    dashboard.addWidgets(
      new AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24, height: 6 }),
    );
    const { perAddress, anonymous } = Firewall.RATE_RULES;
    dashboard.addWidgets(
      new GraphWidget({
        title: "API requests and errors",
        left: [
          api.metricCount({ period: FIVE_MINUTES, label: "requests" }),
          api.metricClientError({ period: FIVE_MINUTES, statistic: "Sum", label: "4xx" }),
          api.metricServerError({ period: FIVE_MINUTES, statistic: "Sum", label: "5xx" }),
        ],
        width: 8,
      }),
      new GraphWidget({
        title: "API 429s and the firewall's blocks",
        left: [
          props.apiThrottled,
          props.firewall.metricBlocked(perAddress).with({ label: "rate limited, address" }),
          props.firewall.metricBlocked(anonymous).with({ label: "rate limited, anonymous" }),
          props.firewall.metricBlocked("ALL").with({ label: "all blocks" }),
        ],
        width: 8,
      }),
      new GraphWidget({
        title: "API latency (ms)",
        left: ["p50", "p95", "p99"].map((statistic) =>
          api.metricLatency({ period: FIVE_MINUTES, statistic, label: statistic }),
        ),
        width: 8,
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
    dashboard.addWidgets(
      new GraphWidget({
        title: "Table throttle events",
        left: ["Read", "Write"].map((kind) =>
          props.table.metric(`${kind}ThrottleEvents`, {
            period: FIVE_MINUTES,
            statistic: "Sum",
            label: kind.toLowerCase(),
          }),
        ),
        width: 12,
      }),
      new GraphWidget({
        title: "Sources and competitor checks (per hour)",
        left: BUSINESS.failing.flatMap(({ failed, succeeded }) =>
          [succeeded, failed].map(
            (metricName) =>
              new Metric({
                namespace: BUSINESS.namespace,
                metricName,
                dimensionsMap: { ...BUSINESS.dimensions },
                statistic: "Sum",
                period: Duration.hours(1),
                label: metricName,
              }),
          ),
        ),
        width: 12,
      }),
    );
  }
}
