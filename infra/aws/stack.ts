import { ArnFormat, CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import { EventType } from "aws-cdk-lib/aws-s3";
import { SqsDestination } from "aws-cdk-lib/aws-s3-notifications";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { apiFunctions, invokedFunctions } from "../../functions/manifest.js";
import { DEFAULT_RETENTION_DAYS } from "../../lib/competitors/history.js";
import { UPLOAD_NOTIFICATION_FILTER } from "../../lib/knowledge/uploads/files.js";
import { Api } from "./constructs/api.js";
import { Deployments } from "./constructs/deployments.js";
import type { MailSender, ModelKeySecret } from "./constructs/grants.js";
import { apiLatencyP95Ms, Monitoring, nearTimeoutMs } from "./constructs/monitoring.js";
import { WorkQueues } from "./constructs/queues.js";
import { Schedules } from "./constructs/schedules.js";
import { ServiceFunction } from "./constructs/service-function.js";
import { Storage } from "./constructs/storage.js";
import { Workers } from "./constructs/workers.js";
import type { DeploySettings } from "./settings.js";

/**
 * The whole service: storage, queues, API functions behind API Gateway and AWS WAF, workers,
 * gradual deploys and alarms. One deploy of it is a stage (`-c stage=prod`): the stack is named
 * `KbIntel-<stage>`, and every name it sets starts with `kb-intel-<stage>`, so stages share an
 * account and a region; every other name is CloudFormation's, unique by construction.
 */
export interface KbIntelStackProps extends StackProps {
  /** Folders of the bundled functions by name, from `bundleAll` in `infra/aws/bundle.ts`. */
  bundles: Map<string, { dir: string }>;
  /** The deploy's settings, from `infra/aws/settings.json` (see `settings.ts`). */
  settings: DeploySettings;
}

export class KbIntelStack extends Stack {
  constructor(scope: Construct, id: string, props: KbIntelStackProps) {
    super(scope, id, { ...props, stackName: props.stackName ?? `KbIntel-${props.settings.stage}` });
    const { settings } = props;
    const prefix = `kb-intel-${settings.stage}`;
    const bundleDir = (name: string) => {
      const bundle = props.bundles.get(name);
      if (!bundle) throw new Error(`Function ${name} was not bundled`);
      return bundle.dir;
    };
    const storage = new Storage(this, "Storage", {
      corsOrigins: settings.corsOrigins,
      prefix,
      dataProtection: settings.dataProtection,
      // Competitors' screenshots expire with the snapshots they show (lib/competitors/screenshots.ts).
      screenshotRetentionDays: Number(
        settings.service.SNAPSHOT_RETENTION_DAYS ?? DEFAULT_RETENTION_DAYS,
      ),
    });
    const queues = new WorkQueues(this, "Queues");
    // Presigned uploads land straight in the bucket; its notification starts their indexing.
    storage.bucket.addEventNotification(
      EventType.OBJECT_CREATED,
      new SqsDestination(queues.queue("uploads")),
      UPLOAD_NOTIFICATION_FILTER,
    );
    storage.keepNotificationLogs(this);
    const environment = {
      ...settings.service,
      CORS_ORIGINS: settings.corsOrigins.join(","),
      TABLE_NAME: storage.table.tableName,
      BUCKET_NAME: storage.bucket.bucketName,
      DATA_KEY_ID: storage.dataKey.keyArn,
      ...queues.environment(),
    };
    const modelKey: ModelKeySecret | undefined = settings.modelKeySecret
      ? {
          name: settings.modelKeySecret,
          arn: this.formatArn({
            service: "secretsmanager",
            resource: "secret",
            resourceName: `${settings.modelKeySecret}-??????`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        }
      : undefined;

    // SES authorises a send on the sender's identity: its address, and its domain when the domain
    // is what was verified. Without MAIL_FROM no function may send email.
    const mailFrom = settings.service.MAIL_FROM;
    const mailSender: MailSender | undefined = mailFrom
      ? {
          address: mailFrom,
          identities: [mailFrom, mailFrom.split("@")[1] ?? mailFrom].map((identity) =>
            this.formatArn({ service: "ses", resource: "identity", resourceName: identity }),
          ),
        }
      : undefined;

    const context = { storage, queues, environment, modelKey, mailSender, bundleDir };
    const functions = apiFunctions.map((spec) => {
      const fn = new ServiceFunction(this, spec, context);
      return { spec, fn };
    });
    const api = new Api(this, "Http", {
      functions,
      name: prefix,
      throttle: settings.throttle,
      waf: settings.waf,
      corsOrigins: settings.corsOrigins,
    });
    const workers = new Workers(this, "Workers", context);
    const schedules = new Schedules(this, "Schedules", context);
    this.invokedFunctions(context, [
      ...functions.map(({ spec, fn }) => [spec.name, fn] as const),
      ...workers.functions,
    ]);

    // Scheduled functions run on $LATEST: a run is one invocation, with nothing to shift.
    new Deployments(this, "Deploys", {
      prefix,
      functions: [
        ...functions.map(({ spec, fn }) => ({
          name: spec.name,
          fn,
          latency: { statistic: "p95", thresholdMs: apiLatencyP95Ms(spec.name) },
        })),
        ...[...workers.functions].map(([name, fn]) => ({
          name,
          fn,
          latency: { statistic: "p99", thresholdMs: nearTimeoutMs(fn) },
        })),
      ],
    });

    new Monitoring(this, "Monitoring", {
      prefix,
      api: api.restApi,
      apiThrottled: api.throttled,
      firewall: api.firewall,
      apiFunctions: new Map(functions.map(({ spec, fn }) => [spec.name, fn] as const)),
      workers: workers.functions,
      scheduled: schedules.functions,
      table: storage.table,
      workQueues: queues.watched(),
      deadLetterQueues: new Map<string, Queue>([
        ...queues.deadLetterQueues,
        ["schedules", schedules.deadLetterQueue],
      ]),
      alarmEmail: settings.alarmEmail,
    });

    new CfnOutput(this, "ApiUrl", { value: api.restApi.url });
    new CfnOutput(this, "TableName", { value: storage.table.tableName });
    new CfnOutput(this, "BucketName", { value: storage.bucket.bucketName });
    for (const [name, dlq] of queues.deadLetterQueues) {
      new CfnOutput(this, `${name}DeadLetterQueueArn`, { value: dlq.queueArn });
    }
    new CfnOutput(this, "schedulesDeadLetterQueueArn", {
      value: schedules.deadLetterQueue.queueArn,
    });
  }

  /**
   * The functions the others invoke (the manifest's `invokedFunctions`): each caller is told the
   * function's name and may invoke it, and no other function may. They run on $LATEST, as the
   * schedules do: a caller's invocation is one render, with nothing to shift gradually.
   */
  private invokedFunctions(
    context: ConstructorParameters<typeof ServiceFunction>[2],
    callers: Array<readonly [string, ServiceFunction]>,
  ) {
    const byName = new Map(callers);
    for (const spec of invokedFunctions) {
      const fn = new ServiceFunction(this, spec, context);
      for (const name of spec.invokedBy) {
        const caller = byName.get(name);
        if (!caller) throw new Error(`${name}, which invokes ${spec.name}, is not in the stack`);
        caller.addEnvironment(spec.nameVariable, fn.functionName);
        caller.addToRolePolicy(
          new PolicyStatement({ actions: ["lambda:InvokeFunction"], resources: [fn.functionArn] }),
        );
      }
    }
  }
}
