import { CfnOutput, SecretValue, Stack, type StackProps } from "aws-cdk-lib";
import { EventType } from "aws-cdk-lib/aws-s3";
import { SqsDestination } from "aws-cdk-lib/aws-s3-notifications";
import type { Construct } from "constructs";
import { apiFunctions } from "../../functions/manifest.js";
import { CONFIG_KEYS } from "../../lib/config.js";
import { UPLOAD_NOTIFICATION_FILTER } from "../../lib/knowledge/uploads/files.js";
import { Api } from "./constructs/api.js";
import { WorkQueues } from "./constructs/queues.js";
import { Schedules } from "./constructs/schedules.js";
import { ServiceFunction } from "./constructs/service-function.js";
import { Storage } from "./constructs/storage.js";
import { Workers } from "./constructs/workers.js";

/** The whole service: storage, queues, API functions behind API Gateway, and workers. */
export interface KbIntelStackProps extends StackProps {
  /** Folders of the bundled functions by name, from `bundleAll` in `infra/aws/bundle.ts`. */
  bundles: Map<string, { dir: string }>;
  /** Service settings for every function (model, limits, quotas...), e.g. from the synth environment. */
  settings?: Record<string, string>;
  /** A Secrets Manager secret holding the model provider's API key, read at deploy time. */
  openAiKeySecret?: string;
}

/** What the stack itself decides; a setting of the same name is ignored. */
const MANAGED = new Set(["TABLE_NAME", "BUCKET_NAME", "OPENAI_API_KEY", "ALLOW_PRIVATE_URLS"]);

/** The service's settings present in an environment, minus what the stack manages. */
export function settingsFrom(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    CONFIG_KEYS.flatMap((key) => {
      const value = env[key];
      return value !== undefined && !MANAGED.has(key) && !key.endsWith("_QUEUE_URL")
        ? [[key, value]]
        : [];
    }),
  );
}

export class KbIntelStack extends Stack {
  constructor(scope: Construct, id: string, props: KbIntelStackProps) {
    super(scope, id, props);
    const bundleDir = (name: string) => {
      const bundle = props.bundles.get(name);
      if (!bundle) throw new Error(`Function ${name} was not bundled`);
      return bundle.dir;
    };
    const storage = new Storage(this, "Storage");
    const queues = new WorkQueues(this, "Queues");
    // Presigned uploads land straight in the bucket; its notification starts their indexing.
    storage.bucket.addEventNotification(
      EventType.OBJECT_CREATED,
      new SqsDestination(queues.queue("uploads")),
      UPLOAD_NOTIFICATION_FILTER,
    );
    const environment = {
      ...props.settings,
      TABLE_NAME: storage.table.tableName,
      BUCKET_NAME: storage.bucket.bucketName,
      ...queues.environment(),
      // The key is a dynamic reference: CloudFormation resolves it, the template never holds it.
      ...(props.openAiKeySecret
        ? {
            OPENAI_API_KEY: SecretValue.secretsManager(props.openAiKeySecret).unsafeUnwrap(),
          }
        : {}),
    };

    const context = { storage, queues, environment, bundleDir };
    const functions = apiFunctions.map((spec) => {
      const fn = new ServiceFunction(this, spec, context);
      return { spec, fn };
    });
    const api = new Api(this, "Http", { functions, throttle: { rateLimit: 100, burstLimit: 200 } });
    new Workers(this, "Workers", context);
    new Schedules(this, "Schedules", context);

    new CfnOutput(this, "ApiUrl", { value: api.restApi.url });
    new CfnOutput(this, "TableName", { value: storage.table.tableName });
    new CfnOutput(this, "BucketName", { value: storage.bucket.bucketName });
    for (const [name, dlq] of queues.deadLetterQueues) {
      new CfnOutput(this, `${name}DeadLetterQueueArn`, { value: dlq.queueArn });
    }
  }
}
