import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import { EventType } from "aws-cdk-lib/aws-s3";
import { SqsDestination } from "aws-cdk-lib/aws-s3-notifications";
import type { Construct } from "constructs";
import { apiFunctions } from "../functions/manifest.js";
import { UPLOAD_NOTIFICATION_FILTER } from "../lib/knowledge/uploads-files.js";
import { Api } from "./constructs/api.js";
import { WorkQueues } from "./constructs/queues.js";
import { Schedules } from "./constructs/schedules.js";
import { ServiceFunction } from "./constructs/service-function.js";
import { Storage } from "./constructs/storage.js";
import { Workers } from "./constructs/workers.js";

/** The whole service: storage, queues, API functions behind API Gateway, and workers. */
export interface KbIntelStackProps extends StackProps {
  /** Folders of the bundled functions by name, from `bundleAll` in `infra/bundle.ts`. */
  bundles: Map<string, { dir: string }>;
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
      TABLE_NAME: storage.table.tableName,
      BUCKET_NAME: storage.bucket.bucketName,
      ...queues.environment(),
    };

    const functions = apiFunctions.map((spec) => {
      const fn = new ServiceFunction(this, spec.name, {
        bundleDir: bundleDir(spec.name),
        ...(spec.memoryMb ? { memoryMb: spec.memoryMb } : {}),
        environment,
      });
      fn.grantAccess(spec.access, storage, queues);
      return { spec, fn };
    });
    const api = new Api(this, "Http", { functions, throttle: { rateLimit: 100, burstLimit: 200 } });
    new Workers(this, "Workers", { storage, queues, environment, bundleDir });
    new Schedules(this, "Schedules", { storage, queues, environment, bundleDir });

    new CfnOutput(this, "ApiUrl", { value: api.restApi.url });
    new CfnOutput(this, "TableName", { value: storage.table.tableName });
    new CfnOutput(this, "BucketName", { value: storage.bucket.bucketName });
    for (const [name, dlq] of queues.deadLetterQueues) {
      new CfnOutput(this, `${name}DeadLetterQueueArn`, { value: dlq.queueArn });
    }
  }
}
