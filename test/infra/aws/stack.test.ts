import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { beforeAll, describe, expect, it, vi } from "vitest";
import {
  apiFunctions,
  QUEUES,
  queueWorkers,
  scheduledFunctions,
} from "../../../functions/manifest.js";
import {
  type BundleRequest,
  bundleAll,
  bundleFunction,
  nodeModulesBytes,
} from "../../../infra/aws/bundle.js";
import { eventBridgeCron } from "../../../infra/aws/constructs/schedules.js";
import { deploySettings, readSettingsFile } from "../../../infra/aws/settings.js";
import { KbIntelStack } from "../../../infra/aws/stack.js";
import { MAX_RECEIVE_COUNT } from "../../../lib/config.js";

let stack: KbIntelStack;
let template: Template;
let bundles: Awaited<ReturnType<typeof bundleAll>>;
const pinned = readSettingsFile();
/** What the committed file leaves empty, given on the command line as a deploy would. */
const ORIGINS = "https://app.example.com,https://admin.example.com";
const OVERRIDES = { CORS_ORIGINS: ORIGINS, ALARM_EMAIL: "ops@example.com" };
type Resource = { Properties: Record<string, unknown> };

/**
 * Budget for an API function's minified bundle: small bundles keep cold starts short. It moved
 * from 500 to 1,200 KiB when the AWS SDK went into the bundles (issue 15): knowledge-api grew from
 * 483 to 1,102 KiB, yet its cold start fell. Bench figure 1 (`npm run bench -- --only=cold-start`),
 * the bundle against its peer with the SDK left to the runtime, medians of 12 fresh processes:
 * before the change 482 vs 616 ms spawn to first answer (importing the bundle 258 vs 427 ms);
 * after it, on a machine twice as loaded, 1,350 vs 2,075 ms (import 798 vs 1,642 ms). One
 * tree-shaken, minified file loads faster than the SDK resolved package by package. Of the SDK's
 * ~600 KiB, ~95 KiB are credential providers a function never uses (its credentials come from the
 * environment), the next saving; ~150 KB is the openai SDK, of which knowledge-api needs
 * embeddings only. The search engine itself is installed beside the bundle, not in it.
 */
// 1,300 KiB since Powertools Tracer (issue 15): about 124 KiB (aws-xray-sdk-core, cls-hooked,
// semver) in every function that uses the stores and about 50 ms of a cold start's import, for a
// trace of each request's DynamoDB, S3, SQS and model calls (README, Operations).
const API_BUNDLE_BUDGET = 1300 * 1024;

beforeAll(async () => {
  bundles = await bundleAll(await mkdtemp(join(tmpdir(), "bundles-")), false);
  // An empty environment: everything comes from infra/aws/settings.json and the overrides.
  const settings = deploySettings(pinned, OVERRIDES, {});
  stack = new KbIntelStack(new App(), "Test", { bundles, settings });
  template = Template.fromStack(stack);
}, 300_000);

/** The logical id of the function the manifest calls `name`. */
function functionId(name: string): string {
  const ids = Object.keys(template.findResources("AWS::Lambda::Function")).filter((id) =>
    id.includes(name.replace(/-/g, "")),
  );
  const shortest = ids.sort((a, b) => a.length - b.length)[0];
  if (!shortest) throw new Error(`no function ${name}`);
  return shortest;
}

/** Full path of an API Gateway resource, built by walking its parents. */
function resourcePath(resources: Record<string, Resource>, id: string): string {
  const resource = resources[id];
  if (!resource) return "";
  const parent = resource.Properties.ParentId as { Ref?: string };
  return `${parent.Ref && resources[parent.Ref] ? resourcePath(resources, parent.Ref) : ""}/${resource.Properties.PathPart}`;
}

type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };

/** The service's functions (CDK's own helpers carry no TABLE_NAME). */
function ourFunctions() {
  const functions = template.findResources("AWS::Lambda::Function") as Record<string, Resource>;
  return Object.values(functions).filter((f) =>
    JSON.stringify(f.Properties.Environment ?? {}).includes("TABLE_NAME"),
  ) as Array<{
    Properties: { Environment: { Variables: Record<string, unknown> } } & Record<string, unknown>;
  }>;
}

/** Every statement of the policies attached to a function's role. */
function statementsOf(name: string): Statement[] {
  const fn = template.toJSON().Resources[functionId(name)] as Resource;
  const [role] = (fn.Properties.Role as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"];
  return Object.values(template.findResources("AWS::IAM::Policy") as Record<string, Resource>)
    .filter((p) => (p.Properties.Roles as Array<{ Ref?: string }>).some((r) => r.Ref === role))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

/** The logical id of a work queue (not its dead-letter queue). */
function queueIdOf(name: string): string {
  const ids = Object.keys(template.findResources("AWS::SQS::Queue")).filter((id) =>
    new RegExp(`^Queues${name}[0-9A-F]{8}$`).test(id),
  );
  if (ids.length !== 1) throw new Error(`no queue ${name}`);
  return ids[0] as string;
}

/** The actions a function's role allows, sorted, each once. */
const actionsOf = (name: string) =>
  [...new Set(statementsOf(name).flatMap((st) => [st.Action].flat()))].sort();

describe("the stack", () => {
  it("routes every path of every API function to that function, any method", () => {
    const resources = template.findResources("AWS::ApiGateway::Resource") as Record<
      string,
      Resource
    >;
    const methods = Object.values(
      template.findResources("AWS::ApiGateway::Method") as Record<string, Resource>,
    );
    for (const fn of apiFunctions) {
      for (const route of fn.routes) {
        const match = methods.find((m) => {
          const resourceRef = (m.Properties.ResourceId as { Ref?: string }).Ref ?? "";
          // A method on the API's root (the console's page) names the root by GetAtt, not Ref.
          const path = resourceRef ? resourcePath(resources, resourceRef) : "/";
          return (
            // One ANY method: a method the function does not serve gets its 405 with Allow.
            m.Properties.HttpMethod === "ANY" &&
            path === route.path &&
            JSON.stringify(m.Properties.Integration).includes(functionId(fn.name))
          );
        });
        expect(match, `${route.method} ${route.path} -> ${fn.name}`).toBeDefined();
      }
    }
    expect(
      methods.filter((m) => !["ANY", "OPTIONS"].includes(String(m.Properties.HttpMethod))),
    ).toEqual([]);
  });

  it("notifies the uploads queue of presigned uploads landing in the bucket", () => {
    template.hasResourceProperties("Custom::S3BucketNotifications", {
      NotificationConfiguration: {
        QueueConfigurations: [
          Match.objectLike({
            Events: ["s3:ObjectCreated:*"],
            Filter: {
              Key: {
                FilterRules: Match.arrayWith([
                  { Name: "suffix", Value: "/upload" },
                  { Name: "prefix", Value: "uploads/" },
                ]),
              },
            },
          }),
        ],
      },
    });
  });

  it("answers the gateway's own errors with the service's body and the allowed origin", () => {
    for (const [type, status] of [
      ["MISSING_AUTHENTICATION_TOKEN", "404"],
      ["THROTTLED", "429"],
      ["UNSUPPORTED_MEDIA_TYPE", "415"],
      ["DEFAULT_4XX", undefined],
      ["DEFAULT_5XX", undefined],
    ] as const) {
      template.hasResourceProperties("AWS::ApiGateway::GatewayResponse", {
        ResponseType: type,
        ...(status ? { StatusCode: status } : {}),
        ResponseParameters: {
          // Two origins allowed: the gateway echoes the caller's (its answers carry no data).
          "gatewayresponse.header.Access-Control-Allow-Origin": "method.request.header.Origin",
          "gatewayresponse.header.Vary": "'Origin'",
        },
        ResponseTemplates: {
          "application/json": Match.stringLikeRegexp('^\\{"error":\\{"code":"'),
        },
      });
    }
    // Preflights are the gateway's, without a key, for the configured origins only.
    const preflight = template.findResources("AWS::ApiGateway::Method", {
      Properties: { HttpMethod: "OPTIONS" },
    });
    const first = JSON.stringify(Object.values(preflight)[0]);
    expect(first).toContain("https://admin.example.com");
    expect(first).not.toContain("'*'");
    template.hasResourceProperties("AWS::S3::Bucket", {
      CorsConfiguration: {
        CorsRules: [Match.objectLike({ AllowedOrigins: ORIGINS.split(",") })],
      },
    });
    template.hasResourceProperties("AWS::ApiGateway::RestApi", {
      BinaryMediaTypes: Match.arrayWith(["multipart/form-data"]),
    });
  });

  it("runs every function on Node.js 22, arm64, traced", () => {
    const functions = template.findResources("AWS::Lambda::Function") as Record<string, Resource>;
    // Ours carry the service's environment; CDK's own helpers (bucket notifications) do not.
    const ours = Object.values(functions).filter((f) =>
      JSON.stringify(f.Properties.Environment ?? {}).includes("TABLE_NAME"),
    );
    expect(ours).toHaveLength(
      apiFunctions.length + queueWorkers.length + scheduledFunctions.length,
    );
    for (const fn of ours) {
      expect(fn.Properties).toMatchObject({
        Runtime: "nodejs22.x",
        Architectures: ["arm64"],
        TracingConfig: { Mode: "Active" },
      });
    }
  });

  it("builds from the committed settings alone, in any shell", () => {
    const variables = ourFunctions().map((f) => f.Properties.Environment.Variables);
    for (const env of variables) {
      expect(env.LLM_MODEL).toBe(pinned.LLM_MODEL);
      expect(env.EMBEDDING_MODEL).toBe(pinned.EMBEDDING_MODEL);
      expect(env.CORS_ORIGINS).toBe(ORIGINS);
      expect(env.TABLE_NAME).toEqual({ Ref: expect.stringMatching(/^StorageTable/) });
    }
    template.hasResourceProperties("AWS::SNS::Subscription", {
      Protocol: "email",
      Endpoint: "ops@example.com",
    });
  });

  it("gives the key's secret name, and the right to read it, only to functions that call the model", () => {
    const callers = [...apiFunctions, ...queueWorkers, ...scheduledFunctions]
      .filter((fn) => fn.access.model)
      .map((fn) => fn.name);
    expect(callers).toEqual(
      expect.arrayContaining([
        "knowledge-api",
        "intel-api",
        "index-worker",
        "competitors-api",
        "competitor-check-worker",
      ]),
    );
    for (const fn of [...apiFunctions, ...queueWorkers, ...scheduledFunctions]) {
      const id = functionId(fn.name);
      const env = JSON.stringify(
        (template.toJSON().Resources[id] as Resource).Properties.Environment,
      );
      expect(env, fn.name).not.toMatch(/OPENAI_API_KEY|resolve:secretsmanager/);
      const expected = callers.includes(fn.name) ? pinned.LLM_API_KEY_SECRET : undefined;
      expect(JSON.parse(env).Variables.LLM_API_KEY_SECRET, fn.name).toBe(expected);
      expect(actionsOf(fn.name).includes("secretsmanager:GetSecretValue"), fn.name).toBe(
        callers.includes(fn.name),
      );
    }
    expect(JSON.stringify(template.toJSON())).not.toMatch(/resolve:secretsmanager/);
    const grants = Object.values(
      template.findResources("AWS::IAM::Policy") as Record<string, Resource>,
    )
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
      .filter((st) => [st.Action].flat().includes("secretsmanager:GetSecretValue"));
    for (const grant of grants) {
      expect(JSON.stringify(grant.Resource)).toContain(
        `:secret:${pinned.LLM_API_KEY_SECRET}-??????`,
      );
    }
  });

  it("keeps one on-demand table with point-in-time recovery", () => {
    template.resourceCountIs("AWS::DynamoDB::Table", 1);
    template.hasResourceProperties("AWS::DynamoDB::Table", {
      BillingMode: "PAY_PER_REQUEST",
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
    });
  });

  it("keeps one private, encrypted, TLS-only, versioned bucket whose old versions expire", () => {
    template.resourceCountIs("AWS::S3::Bucket", 1);
    template.hasResourceProperties("AWS::S3::Bucket", {
      VersioningConfiguration: { Status: "Enabled" },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ NoncurrentVersionExpiration: { NoncurrentDays: 30 } }),
          Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 } }),
          Match.objectLike({ Prefix: "uploads/", ExpirationInDays: 1 }),
        ]),
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          { ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } },
        ],
      },
    });
    template.hasResourceProperties("AWS::S3::BucketPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: "Deny",
            Condition: { Bool: { "aws:SecureTransport": "false" } },
          }),
        ]),
      },
    });
  });

  it("gives every queue a dead-letter queue and a visibility timeout of six worker timeouts", () => {
    const queues = template.findResources("AWS::SQS::Queue", {
      Properties: { RedrivePolicy: Match.anyValue() },
    }) as Record<string, Resource>;
    expect(Object.keys(queues)).toHaveLength(QUEUES.length);
    for (const worker of queueWorkers) {
      const [, queue] = Object.entries(queues).find(([id]) => id.includes(worker.queue)) ?? [];
      expect(queue?.Properties.RedrivePolicy).toMatchObject({ maxReceiveCount: MAX_RECEIVE_COUNT });
      expect(queue?.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * worker.timeoutSeconds);
    }
  });

  it("feeds workers in batches that report item failures, with bounded concurrency", () => {
    for (const worker of queueWorkers) {
      template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
        FunctionName: { Ref: functionId(worker.name) },
        BatchSize: worker.batchSize,
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        ScalingConfig: { MaximumConcurrency: worker.maxConcurrency },
      });
    }
  });

  it("runs each scheduled function on an EventBridge rule whose failures are dead-lettered", () => {
    const dlq = { "Fn::GetAtt": [expect.stringMatching(/^Schedulesfailedruns/), "Arn"] };
    for (const fn of scheduledFunctions) {
      const rules = Object.values(
        template.findResources("AWS::Events::Rule", {
          Properties: { ScheduleExpression: eventBridgeCron(fn.cron) },
        }) as Record<string, Resource>,
      );
      expect(rules[0]?.Properties.Targets).toEqual([
        expect.objectContaining({
          Arn: { "Fn::GetAtt": [functionId(fn.name), "Arn"] },
          RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
          DeadLetterConfig: { Arn: dlq },
        }),
      ]);
      const invoke = Object.values(
        template.findResources("AWS::Lambda::EventInvokeConfig") as Record<string, Resource>,
      ).find((c) => JSON.stringify(c.Properties.FunctionName).includes(functionId(fn.name)));
      expect(invoke?.Properties.DestinationConfig).toEqual({ OnFailure: { Destination: dlq } });
    }
  });

  it("allows each function exactly the actions its code performs", () => {
    const base = [
      "logs:CreateLogStream",
      "logs:PutLogEvents",
      "xray:PutTelemetryRecords",
      "xray:PutTraceSegments",
    ];
    const read = ["dynamodb:GetItem", "dynamodb:Query"];
    const write = [...read, "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"];
    const consume = [
      "sqs:ChangeMessageVisibility",
      "sqs:DeleteMessage",
      "sqs:GetQueueAttributes",
      "sqs:GetQueueUrl",
      "sqs:ReceiveMessage",
    ];
    const key = ["secretsmanager:GetSecretValue"];
    const send = ["sqs:SendMessage"];
    const list = ["s3:ListBucket"];
    // sqs:SendMessage comes with the queues a function sends to, checked below, and to every
    // scheduled function (a failed run goes to the schedules' dead-letter queue).
    const expected: Record<string, string[]> = {
      "knowledge-api": [
        ...write,
        ...key,
        ...list,
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
      ],
      "intel-api": [...write, ...key, ...list, "s3:GetObject"],
      "competitors-api": [
        ...write,
        ...key,
        ...list,
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
      ],
      "webhooks-api": [...write],
      "docs-api": [],
      "console-web": [],
      "index-worker": [
        ...write,
        ...consume,
        ...key,
        ...list,
        "s3:AbortMultipartUpload",
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:PutObject",
      ],
      "crawl-worker": [...write, ...consume, ...list, "s3:PutObject"],
      "upload-events-worker": [
        ...write,
        ...consume,
        ...list,
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
      ],
      "competitor-check-worker": [
        ...write,
        ...consume,
        ...key,
        ...list,
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
      ],
      "webhooks-worker": [...write, ...consume],
      watchdog: [...write, ...list, "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
      "competitor-sweep": [...read],
      refresh: [...write],
    };
    for (const fn of [...apiFunctions, ...queueWorkers, ...scheduledFunctions]) {
      const actions = expected[fn.name];
      expect(actions, `${fn.name}: write down its actions here`).toBeDefined();
      const sends = fn.access.sends ?? [];
      const scheduled = scheduledFunctions.some((f) => f.name === fn.name);
      const all = [...base, ...(actions ?? []), ...(sends.length > 0 || scheduled ? send : [])];
      expect(actionsOf(fn.name), fn.name).toEqual([...new Set(all)].sort());
      const sendsTo = statementsOf(fn.name)
        .filter((st) => st.Action === "sqs:SendMessage")
        .flatMap((st) => [st.Resource].flat())
        .map((r) => (r as { "Fn::GetAtt": [string] })["Fn::GetAtt"][0]);
      expect(sendsTo.filter((q) => q.startsWith("Queues")).sort(), fn.name).toEqual(
        sends.map((q) => queueIdOf(q)).sort(),
      );
      // Objects only under the prefixes of their areas, never the whole bucket.
      for (const st of statementsOf(fn.name)) {
        const resource = JSON.stringify(st.Resource);
        if ([st.Action].flat().some((a) => a.startsWith("s3:") && a !== "s3:ListBucket")) {
          expect(resource, fn.name).toMatch(
            /\/(ws\/\*\/(kb|competitors)\/\*\/\*|uploads\/ws\/\*\/kb\/\*\/upload|search\/\*)"/,
          );
        }
        expect(resource, fn.name).not.toMatch(/\/index\/\*/);
      }
    }
    const prefix = (path: string) => ({
      "Fn::Join": ["", [{ "Fn::GetAtt": [expect.stringMatching(/^StorageBucket/), "Arn"] }, path]],
    });
    // Intel reads the search index and competitors' snapshots, never a knowledge source's files.
    const reads = statementsOf("intel-api")
      .filter((st) => st.Action === "s3:GetObject")
      .flatMap((st) => [st.Resource].flat());
    expect(reads).toEqual([prefix("/search/*"), prefix("/ws/*/competitors/*/*")]);
  });

  it("passes cdk-nag's AwsSolutions and Serverless packs, with every exception written down", () => {
    for (const pack of [new AwsSolutionsChecks(), new ServerlessChecks()]) {
      const findings = pack
        .validateScope(stack)
        .violations.map(
          (v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
        );
      expect(findings).toEqual([]);
    }
  });

  it("alarms on every dead letter, backlog, API 5xx and latency, function error and throttle, to one topic", () => {
    const alarms = Object.values(
      template.findResources("AWS::CloudWatch::Alarm") as Record<string, Resource>,
    ).map((a) => a.Properties);
    const functions = [...apiFunctions, ...queueWorkers, ...scheduledFunctions];
    const named = (name: string) => alarms.find((a) => a.AlarmName === `kb-intel ${name}`);
    for (const queue of [...QUEUES, "schedules"]) {
      expect(named(`dead letters ${queue}`), queue).toMatchObject({
        MetricName: "ApproximateNumberOfMessagesVisible",
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
      });
    }
    for (const queue of QUEUES) {
      expect(named(`queue age ${queue}`)?.MetricName, queue).toBe("ApproximateAgeOfOldestMessage");
    }
    expect(named("api 5xx rate")).toMatchObject({ MetricName: "5XXError", Statistic: "Average" });
    expect(named("api p95 latency")).toMatchObject({
      MetricName: "Latency",
      ExtendedStatistic: "p95",
    });
    for (const fn of functions) {
      expect(named(`errors ${fn.name}`)?.Dimensions, fn.name).toEqual([
        { Name: "FunctionName", Value: { Ref: functionId(fn.name) } },
      ]);
      expect(named(`throttles ${fn.name}`)?.MetricName, fn.name).toBe("Throttles");
    }
    expect(alarms).toHaveLength(QUEUES.length * 2 + 1 + 2 + functions.length * 2);
    template.resourceCountIs("AWS::SNS::Topic", 1);
    const topic = Object.keys(template.findResources("AWS::SNS::Topic"))[0];
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([{ Ref: topic }]);
    template.resourceCountIs("AWS::CloudWatch::Dashboard", 1);
  });

  it("keeps every log group for a month, the API's and CDK's handler's included", () => {
    const groups = Object.values(
      template.findResources("AWS::Logs::LogGroup") as Record<string, Resource>,
    ).map((g) => g.Properties);
    for (const group of groups) expect(group.RetentionInDays).toBe(30);
    const names = JSON.stringify(groups.map((g) => g.LogGroupName));
    expect(names).toContain("API-Gateway-Execution-Logs_");
    // Every function logs to a group of the stack: its own, or one named after it.
    const functions = template.findResources("AWS::Lambda::Function") as Record<string, Resource>;
    for (const [id, fn] of Object.entries(functions)) {
      const own = JSON.stringify(fn.Properties.LoggingConfig ?? "");
      expect(own.includes("Logs") || names.includes(`"/aws/lambda/",{"Ref":"${id}"}`), id).toBe(
        true,
      );
    }
    template.hasResourceProperties("AWS::ApiGateway::Stage", {
      AccessLogSetting: { DestinationArn: Match.anyValue() },
    });
  });
});

describe("a deploy from another shell", () => {
  /** Each function's code, an asset named by the hash CDK computes from its bundle's folder. */
  const codeOf = (t: Template) =>
    Object.entries(t.findResources("AWS::Lambda::Function") as Record<string, Resource>).map(
      ([id, fn]) => [id, fn.Properties.Code],
    );
  /** The smallest function whose bundle takes in `file`. */
  const smallestWith = (file: string) => {
    const [bundle] = [...bundles.values()]
      .filter((b) => b.inputs.some((input) => input.endsWith(file)))
      .sort((a, b) => a.bytes - b.bytes);
    const fn = [...apiFunctions, ...queueWorkers, ...scheduledFunctions].find(
      (f) => f.name === bundle?.name,
    );
    if (!fn) throw new Error(`no function bundles ${file}`);
    return fn;
  };

  // `cdk diff` after a plain deploy is empty only if a synth is the same from any shell: the same
  // template, with the same asset hashes (a timestamp, an absolute path or a setting of the shell
  // in a bundle would change them). esbuild's output depends on the sources and the options all
  // functions share, so bundling again each way a function is built (with its parse-worker
  // thread, with the docs viewer) covers them in 8 s, against 43 s for all again; the others keep
  // their folders. Without node_modules, as above: those are copies of this checkout's files,
  // hashed by contents and paths inside the folder (the four functions that have them hashed the
  // same from two folders, checked by hand).
  it("synthesizes the same template, asset hashes included", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "another-shell-"));
    const cwd = process.cwd();
    for (const [key, value] of Object.entries({
      LLM_MODEL: "from-the-shell",
      EMBEDDING_MODEL: "from-the-shell",
      CORS_ORIGINS: "*",
      TMPDIR: elsewhere,
    })) {
      vi.stubEnv(key, value);
    }
    process.chdir(elsewhere);
    try {
      const again = new Map(bundles);
      for (const fn of [smallestWith("lib/files/sandbox.ts"), smallestWith("lib/http/docs.ts")]) {
        again.set(fn.name, await bundleFunction(fn, join(elsewhere, "deeper", "bundles"), false));
      }
      const settings = deploySettings(pinned, OVERRIDES, process.env);
      const other = Template.fromStack(
        new KbIntelStack(new App(), "Test", { bundles: again, settings }),
      );
      expect(codeOf(other)).toEqual(codeOf(template));
      expect(other.toJSON()).toEqual(template.toJSON());
    } finally {
      process.chdir(cwd);
      vi.unstubAllEnvs();
      await rm(elsewhere, { recursive: true, force: true });
    }
  }, 300_000);
});

describe("the API bundles", () => {
  it.each(apiFunctions.map((fn) => [fn.name]))(
    "%s stays under 1,300 KiB minified, without jsdom",
    (name) => {
      const bundle = bundles.get(name);
      expect(bundle?.bytes).toBeGreaterThan(0);
      expect(bundle?.bytes).toBeLessThan(API_BUNDLE_BUDGET);
      expect(bundle?.inputs.filter((input) => /node_modules\/jsdom\//.test(input))).toEqual([]);
    },
  );
});

describe("every function's code", () => {
  /** Lambda's limit on a function's code unzipped, layers included (250 MB). */
  const LAMBDA_UNZIPPED = 262_144_000;
  const bytesIn = async (dir: string) => {
    let total = 0;
    for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
      if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
    }
    return total;
  };

  // Measured 2026-11-23 (MiB, as Lambda counts): the search engine (its linux-arm64 binary,
  // Apache Arrow, its JS) adds 167 to knowledge-api and intel-api, 176 in all; with jsdom, 189 to
  // the index worker, the largest at 207 of the 250.
  it.each(
    [...apiFunctions, ...queueWorkers, ...scheduledFunctions].map(
      (fn: BundleRequest) => [fn.name, fn] as const,
    ),
  )("%s fits Lambda's 250 MB unzipped with the packages copied beside it", async (name, fn) => {
    const bundle = bundles.get(name);
    if (!bundle) throw new Error(`no bundle for ${name}`);
    const size = (await bytesIn(bundle.dir)) + nodeModulesBytes(fn.nodeModules ?? []);
    expect(size).toBeGreaterThan(bundle.bytes);
    expect(size).toBeLessThan(LAMBDA_UNZIPPED);
  });
});

describe("deploy settings", () => {
  it("come from the committed file; the shell's variables are reported, not used", () => {
    const warnings: string[] = [];
    const shell = { LLM_MODEL: "from-the-shell", OPENAI_API_KEY: "sk-x", PATH: "/bin" };
    const settings = deploySettings(pinned, {}, shell, (w) => warnings.push(w));
    expect(settings.service.LLM_MODEL).toBe(pinned.LLM_MODEL);
    expect(settings.modelKeySecret).toBe(pinned.LLM_API_KEY_SECRET);
    expect(settings.corsOrigins).toEqual([]);
    expect(settings.service).not.toHaveProperty("OPENAI_API_KEY");
    expect(warnings.join()).toMatch(/Ignoring LLM_MODEL from the environment/);
  });

  it("take explicit overrides, and refuse what is not a setting or not valid", () => {
    const settings = deploySettings(pinned, {
      LLM_MODEL: "gpt-4o",
      EMBEDDING_MODEL: "",
      CORS_ORIGINS: "https://a.example, http://localhost:5173",
      "aws:cdk:enable-path-metadata": true,
    });
    expect(settings.service.LLM_MODEL).toBe("gpt-4o");
    expect(settings.service).not.toHaveProperty("EMBEDDING_MODEL");
    expect(settings.corsOrigins).toEqual(["https://a.example", "http://localhost:5173"]);
    expect(() => deploySettings({ ...pinned, LLM_MODLE: "x" })).toThrow(
      /LLM_MODLE is not a deploy setting/,
    );
    expect(() => deploySettings({ ...pinned, TABLE_NAME: "x" })).toThrow(/the stack sets it/);
    expect(() => deploySettings(pinned, { CHUNK_SIZE: "big" })).toThrow(/CHUNK_SIZE/);
    expect(() => deploySettings(pinned, { CORS_ORIGINS: "app.example.com" })).toThrow(
      /CORS_ORIGINS/,
    );
    expect(() => deploySettings(pinned, { ALARM_EMAIL: "ops" })).toThrow(/ALARM_EMAIL/);
  });
});

describe("eventBridgeCron", () => {
  it.each([
    ["*/10 * * * *", "cron(0/10 * * * ? *)"],
    ["0 3 * * *", "cron(0 3 * * ? *)"],
    ["30 6 * * 1-5", "cron(30 6 ? * 2-6 *)"],
    ["0 0 1 * *", "cron(0 0 1 * ? *)"],
  ])("turns %s into %s", (cron, expected) => {
    expect(eventBridgeCron(cron)).toBe(expected);
  });
});
