import { type CfnElement, Duration, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import {
  Alias,
  Architecture,
  Code,
  Function as LambdaFunction,
  RecursiveLoop,
  Runtime,
  Tracing,
} from "aws-cdk-lib/aws-lambda";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import type { Access, BucketArea, Recursion } from "../../../functions/manifest.js";
import {
  AREA_KEYS,
  accessStatements,
  type MailSender,
  type ModelKeySecret,
  PREFIX_GRANT_REASON,
} from "./grants.js";
import type { WorkQueues } from "./queues.js";
import type { Storage } from "./storage.js";

/** What every function of the stack shares: where it reads and writes, and its settings. */
export interface FunctionContext {
  storage: Storage;
  queues: WorkQueues;
  environment: Record<string, string>;
  /** The model provider's key, read at run time by the functions whose access says `model`. */
  modelKey: ModelKeySecret | undefined;
  /** The sender the functions whose access says `mail` may send email as (MAIL_FROM). */
  mailSender?: MailSender | undefined;
  /** The folder `infra/aws/bundle.ts` built for a function (holding `index.mjs`). */
  bundleDir: (name: string) => string;
}

/** A function's entry in the manifest, as far as the stack cares. */
export interface FunctionSpec {
  name: string;
  timeoutSeconds?: number;
  memoryMb?: number;
  access: Access;
  /** A worker that sends its own queue messages on purpose: Lambda must let the loop run. */
  recursion?: Recursion;
  /** arm64 unless a package the function runs ships for x86_64 only. */
  architecture?: "arm64" | "x86_64";
}

/** The alias API Gateway and the event sources invoke, moved from version to version by CodeDeploy. */
export const LIVE_ALIAS = "live";

/**
 * The one place function defaults live: Node 22 on arm64 (x86_64 where the manifest says), X-Ray tracing, a log group kept a
 * month, and a role of its own holding exactly what the manifest lists (no managed policy: it may
 * write only its own log group). A function that calls the model gets the key's secret name in
 * `LLM_API_KEY_SECRET`, never the key. Lambda stops a recursive loop through a queue unless the
 * manifest declares the function's `recursion`.
 */
export class ServiceFunction extends LambdaFunction {
  readonly spec: FunctionSpec;
  private liveAlias: Alias | undefined;

  constructor(scope: Construct, spec: FunctionSpec, context: FunctionContext) {
    const logGroup = new LogGroup(scope, `${spec.name}Logs`, {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new Role(scope, `${spec.name}Role`, {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
    });
    logGroup.grantWrite(role);
    const { modelKey } = context;
    super(scope, spec.name, {
      code: Code.fromAsset(context.bundleDir(spec.name)),
      handler: "index.handler",
      runtime: Runtime.NODEJS_22_X,
      architecture: spec.architecture === "x86_64" ? Architecture.X86_64 : Architecture.ARM_64,
      tracing: Tracing.ACTIVE,
      memorySize: spec.memoryMb ?? 512,
      timeout: Duration.seconds(spec.timeoutSeconds ?? 29),
      environment: {
        NODE_OPTIONS: "--enable-source-maps",
        POWERTOOLS_SERVICE_NAME: "kb-intel",
        ...context.environment,
        ...(spec.access.model && modelKey ? { LLM_API_KEY_SECRET: modelKey.name } : {}),
      },
      role,
      logGroup,
      recursiveLoop: spec.recursion?.allow ? RecursiveLoop.ALLOW : RecursiveLoop.TERMINATE,
      // A deploy publishes a version; the one it replaces is deleted once the deploy is done
      // (kept, versions would fill the region's 75 GB of function code). Going back further is
      // a deploy of the older commit.
      currentVersionOptions: { removalPolicy: RemovalPolicy.DESTROY },
    });
    this.spec = spec;
    const statements = accessStatements(spec.access, context);
    for (const statement of statements) role.addToPolicy(statement);
    acknowledgeFindings(this, role, spec.access, context.storage);
  }

  /**
   * The `live` alias, on the version of this deploy's code and configuration: what API Gateway
   * and the queues invoke, so that a deploy can move traffic to a new version gradually
   * (`Deployments`) and roll it back.
   */
  get live(): Alias {
    this.liveAlias ??= new Alias(this, "Live", {
      aliasName: LIVE_ALIAS,
      version: this.currentVersion,
    });
    return this.liveAlias;
  }
}

/**
 * cdk-nag's findings on every function that are decisions, each with its reason (the tests run
 * the AwsSolutions and Serverless packs and accept nothing else).
 */
function acknowledgeFindings(fn: LambdaFunction, role: Role, access: Access, storage: Storage) {
  const validations = Validations.of(role);
  validations.acknowledge({
    id: "AwsSolutions-IAM5[Resource::*]",
    reason: "X-Ray's PutTraceSegments and PutTelemetryRecords take no resource (tracing is on).",
  });
  const bucket = Stack.of(fn).getLogicalId(storage.bucket.node.defaultChild as CfnElement);
  for (const area of Object.keys(access.bucket ?? {}) as BucketArea[]) {
    validations.acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucket}.Arn>/${AREA_KEYS[area]}]`,
      reason: PREFIX_GRANT_REASON,
    });
  }
  for (const id of ["AwsSolutions-L1", "Serverless-LambdaLatestVersion"]) {
    Validations.of(fn).acknowledge({
      id,
      reason:
        "Node.js 22 is the runtime the bundles target (esbuild node22) and the bench measured; " +
        "moving to a newer one is a change of its own, tested and measured.",
    });
  }
  Validations.of(fn).acknowledge({
    id: "Serverless-LambdaDLQ",
    reason:
      "No function is invoked asynchronously without a failure path: API functions answer " +
      "API Gateway synchronously, workers are fed by SQS queues that dead-letter, and scheduled " +
      "runs send failures to the schedules' dead-letter queue (an on-failure destination).",
  });
}
