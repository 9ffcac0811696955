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
import type { Access } from "../../functions/manifest.js";
import type { WorkQueues } from "./queues.js";
import type { Storage } from "./storage.js";

export interface ServiceFunctionProps {
  /** The folder `infra/bundle.ts` built for this function (holding `index.mjs`). */
  bundleDir: string;
  timeoutSeconds?: number;
  memoryMb?: number;
  environment: Record<string, string>;
}

/** The one place function defaults live: Node 22 on arm64, X-Ray tracing, a log group kept a month. */
export class ServiceFunction extends LambdaFunction {
  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id, {
      code: Code.fromAsset(props.bundleDir),
      handler: "index.handler",
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      tracing: Tracing.ACTIVE,
      memorySize: props.memoryMb ?? 512,
      timeout: Duration.seconds(props.timeoutSeconds ?? 29),
      environment: {
        NODE_OPTIONS: "--enable-source-maps",
        POWERTOOLS_SERVICE_NAME: "kb-intel",
        ...props.environment,
      },
      logGroup: new LogGroup(scope, `${id}Logs`, {
        retention: RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
    });
  }

  /** Grants exactly what the manifest says the function touches. */
  grantAccess(access: Access, storage: Storage, queues: WorkQueues): void {
    if (access.table === "read") storage.table.grantReadData(this);
    if (access.table === "readWrite") storage.table.grantReadWriteData(this);
    if (access.bucket === "read") storage.bucket.grantRead(this);
    if (access.bucket === "readWrite") storage.bucket.grantReadWrite(this);
    for (const queue of access.sends ?? []) queues.queue(queue).grantSendMessages(this);
  }
}
