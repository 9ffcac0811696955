import { Duration, RemovalPolicy } from "aws-cdk-lib";
import {
  Architecture,
  Code,
  Function as LambdaFunction,
  Runtime,
  Tracing,
} from "aws-cdk-lib/aws-lambda";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import type { Access } from "../../../functions/manifest.js";
import type { WorkQueues } from "./queues.js";
import type { Storage } from "./storage.js";

/** What every function of the stack shares: where it reads and writes, and its settings. */
export interface FunctionContext {
  storage: Storage;
  queues: WorkQueues;
  environment: Record<string, string>;
  /** The folder `infra/aws/bundle.ts` built for a function (holding `index.mjs`). */
  bundleDir: (name: string) => string;
}

/** A function's entry in the manifest, as far as the stack cares. */
export interface FunctionSpec {
  name: string;
  timeoutSeconds?: number;
  memoryMb?: number;
  access: Access;
}

/**
 * The one place function defaults live: Node 22 on arm64, X-Ray tracing, a log group kept a
 * month, and exactly the grants the manifest lists.
 */
export class ServiceFunction extends LambdaFunction {
  constructor(scope: Construct, spec: FunctionSpec, context: FunctionContext) {
    super(scope, spec.name, {
      code: Code.fromAsset(context.bundleDir(spec.name)),
      handler: "index.handler",
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      tracing: Tracing.ACTIVE,
      memorySize: spec.memoryMb ?? 512,
      timeout: Duration.seconds(spec.timeoutSeconds ?? 29),
      environment: {
        NODE_OPTIONS: "--enable-source-maps",
        POWERTOOLS_SERVICE_NAME: "kb-intel",
        ...context.environment,
      },
      logGroup: new LogGroup(scope, `${spec.name}Logs`, {
        retention: RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
    });
    const { access } = spec;
    const { storage, queues } = context;
    if (access.table === "read") storage.table.grantReadData(this);
    if (access.table === "readWrite") storage.table.grantReadWriteData(this);
    if (access.bucket === "read") storage.bucket.grantRead(this);
    if (access.bucket === "readWrite") storage.bucket.grantReadWrite(this);
    for (const queue of access.sends ?? []) queues.queue(queue).grantSendMessages(this);
  }
}
