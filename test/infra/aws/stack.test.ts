import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { CURRENTLY_RECOMMENDED_FLAGS } from "aws-cdk-lib/cx-api";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { beforeAll, describe, expect, it, vi } from "vitest";
import {
  apiFunctions,
  invokedFunctions,
  QUEUES,
  queueWorkers,
  scheduledFunctions,
} from "../../../functions/manifest.js";
import {
  type BundleRequest,
  bundleAll,
  bundleFunction,
  fetchPlatformPackages,
  nodeModulesBytes,
} from "../../../infra/aws/bundle.js";
import { bodyRoutesPattern, COUNTED_BODY_RULES } from "../../../infra/aws/constructs/firewall.js";
import {
  API_429_PER_5_MINUTES,
  API_LATENCY_P95_MS,
  apiLatencyP95Ms,
  BUSINESS,
  NEAR_TIMEOUT,
} from "../../../infra/aws/constructs/monitoring.js";
import { eventBridgeCron } from "../../../infra/aws/constructs/schedules.js";
import { BACKUP_RULES } from "../../../infra/aws/constructs/storage.js";
import { deploySettings, readSettingsFile } from "../../../infra/aws/settings.js";
import { KbIntelStack } from "../../../infra/aws/stack.js";
import { CHECK_CAPACITY } from "../../../lib/competitors/capacity.js";
import { MAX_RECEIVE_COUNT } from "../../../lib/config.js";
import { WORKER_SHARES } from "../../../lib/limits/worker-shares.js";
import { WEBHOOK_CAPACITY } from "../../../lib/webhooks/capacity.js";

let stack: KbIntelStack;
let template: Template;
let bundles: Awaited<ReturnType<typeof bundleAll>>;
const pinned = readSettingsFile();
/** What the committed file leaves empty, given on the command line as a deploy would. */
const ORIGINS = "https://app.example.com,https://admin.example.com";
/** A stage other than the file's, named as `cdk deploy -c stage=…` names it. */
const STAGE = "qa7";
const OVERRIDES = {
  CORS_ORIGINS: ORIGINS,
  ALARM_EMAIL: "ops@example.com",
  stage: STAGE,
  WAF_RATE_LIMIT: "2500",
  MAIL_FROM: "digests@mail.example.com",
};
/** cdk.json: the CLI gives its context (the feature flags) to the app; so do the tests. */
const CDK_JSON = JSON.parse(
  readFileSync(new URL("../../../cdk.json", import.meta.url), "utf8"),
) as {
  context: Record<string, unknown>;
};
const cdkApp = () => new App({ context: CDK_JSON.context });
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
// trace of each request's DynamoDB, S3, SQS and model calls (docs/operations.md, Tracing).
// 1,360 KiB since the round of issues 26–31: filter expressions, citation spans and the rerank
// client in knowledge-api, the site-wide watch (sitemaps) and the render seam in competitors-api,
// about 30 KiB each; the presigned POST (75 KiB) moved out of every bundle but knowledge-api's.
const API_BUNDLE_BUDGET = 1360 * 1024;

beforeAll(async () => {
  bundles = await bundleAll(await mkdtemp(join(tmpdir(), "bundles-")), false);
  // An empty environment: everything comes from infra/aws/settings.json and the overrides.
  const settings = deploySettings(pinned, OVERRIDES, {});
  stack = new KbIntelStack(cdkApp(), "Test", { bundles, settings });
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

/** The logical id of the `live` alias of the function the manifest calls `name`. */
function aliasId(name: string): string {
  const aliases = template.findResources("AWS::Lambda::Alias", {
    Properties: { FunctionName: { Ref: functionId(name) }, Name: "live" },
  });
  const ids = Object.keys(aliases);
  if (ids.length !== 1) throw new Error(`no live alias of ${name}`);
  return ids[0] as string;
}

/** Every alarm's properties, by name. */
function alarmsByName(): Map<string, Record<string, unknown>> {
  return new Map(
    Object.values(template.findResources("AWS::CloudWatch::Alarm") as Record<string, Resource>).map(
      (a) => [String(a.Properties.AlarmName), a.Properties],
    ),
  );
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
            // The function's `live` alias, never its unpublished code.
            JSON.stringify(m.Properties.Integration).includes(`"Ref":"${aliasId(fn.name)}"`)
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

  it("runs every function on Node.js 22, arm64 but the render function on x86_64, traced", () => {
    const functions = template.findResources("AWS::Lambda::Function") as Record<string, Resource>;
    // Ours carry the service's environment; CDK's own helpers (bucket notifications) do not.
    const ours = Object.values(functions).filter((f) =>
      JSON.stringify(f.Properties.Environment ?? {}).includes("TABLE_NAME"),
    );
    expect(ours).toHaveLength(
      apiFunctions.length +
        queueWorkers.length +
        scheduledFunctions.length +
        invokedFunctions.length,
    );
    for (const fn of ours) {
      expect(fn.Properties).toMatchObject({
        Runtime: "nodejs22.x",
        TracingConfig: { Mode: "Active" },
      });
    }
    // @sparticuz/chromium ships its Chromium for x86_64 only: the render function runs there.
    const x86 = ours.filter((fn) => JSON.stringify(fn.Properties.Architectures) === '["x86_64"]');
    expect(x86).toEqual([functions[functionId("render")]]);
    expect(
      ours.filter((fn) => JSON.stringify(fn.Properties.Architectures) === '["arm64"]'),
    ).toHaveLength(ours.length - 1);
  });

  it("renders pages in a function of its own, invoked only by the functions that read pages", () => {
    const render = functionId("render");
    const [spec] = invokedFunctions;
    expect(spec?.invokedBy.sort()).toEqual(
      ["competitor-check-worker", "competitors-api", "crawl-worker", "index-worker"].sort(),
    );
    for (const fn of [...apiFunctions, ...queueWorkers, ...scheduledFunctions]) {
      const resource = template.toJSON().Resources[functionId(fn.name)] as Resource;
      const env = (resource.Properties.Environment as { Variables: Record<string, unknown> })
        .Variables;
      const invokes = statementsOf(fn.name).filter((st) =>
        [st.Action].flat().includes("lambda:InvokeFunction"),
      );
      if (spec?.invokedBy.includes(fn.name)) {
        expect(env.RENDER_FUNCTION_NAME, fn.name).toEqual({ Ref: render });
        expect(
          invokes.map((st) => st.Resource),
          fn.name,
        ).toEqual([{ "Fn::GetAtt": [render, "Arn"] }]);
      } else {
        expect(env.RENDER_FUNCTION_NAME, fn.name).toBeUndefined();
        expect(invokes, fn.name).toEqual([]);
      }
    }
    // It reaches the web through its safe fetcher, and none of the service's stores.
    expect(actionsOf("render")).toEqual([
      "logs:CreateLogStream",
      "logs:PutLogEvents",
      "xray:PutTelemetryRecords",
      "xray:PutTraceSegments",
    ]);
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
          // Competitors' screenshots, by their tag, after the snapshots' retention (365 days).
          Match.objectLike({
            TagFilters: [{ Key: "retention", Value: "competitor-screenshot" }],
            ExpirationInDays: 365,
          }),
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
    const mappings = Object.values(
      template.findResources("AWS::Lambda::EventSourceMapping") as Record<string, Resource>,
    );
    expect(mappings).toHaveLength(queueWorkers.length);
    for (const worker of queueWorkers) {
      // The worker's `live` alias (its name, from the alias's ARN): a deploy shifts its queue's
      // messages gradually too.
      const mapping = mappings.find((m) => {
        const name = JSON.stringify(m.Properties.FunctionName);
        return name.includes(`{"Ref":"${aliasId(worker.name)}"}`) && name.includes('":live"');
      });
      expect(mapping?.Properties, worker.name).toMatchObject({
        EventSourceArn: { "Fn::GetAtt": [queueIdOf(worker.queue), "Arn"] },
        BatchSize: worker.batchSize,
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        ScalingConfig: { MaximumConcurrency: worker.maxConcurrency },
      });
    }
  });

  it("sizes the shared workers' event sources from the capacity model", () => {
    const mappings = Object.values(
      template.findResources("AWS::Lambda::EventSourceMapping") as Record<string, Resource>,
    );
    const sized = (queue: string) =>
      mappings.find((m) => JSON.stringify(m.Properties.EventSourceArn).includes(queueIdOf(queue)))
        ?.Properties;
    expect(sized("checks")).toMatchObject({
      BatchSize: CHECK_CAPACITY.batchSize,
      ScalingConfig: { MaximumConcurrency: CHECK_CAPACITY.maxConcurrency },
    });
    // 53 invocations × 2 checks: the 20,000 checks of 1,000 workspaces in under 2 hours.
    expect(CHECK_CAPACITY.maxConcurrency * CHECK_CAPACITY.batchSize).toBeGreaterThanOrEqual(
      (20_000 * CHECK_CAPACITY.meanCheckSeconds) / 7200,
    );
    for (const queue of ["index", "crawl"] as const) {
      expect(sized(queue), queue).toMatchObject({
        BatchSize: WORKER_SHARES[queue].batchSize,
        ScalingConfig: { MaximumConcurrency: WORKER_SHARES[queue].maxConcurrency },
      });
      // A workspace at its share leaves the others an invocation.
      expect(WORKER_SHARES[queue].perWorkspace).toBeLessThan(WORKER_SHARES[queue].maxConcurrency);
    }
  });

  it("sizes the webhooks worker from its model: a batch's attempts fit the visibility timeout", () => {
    const mapping = Object.values(
      template.findResources("AWS::Lambda::EventSourceMapping") as Record<string, Resource>,
    ).find((m) => JSON.stringify(m.Properties.EventSourceArn).includes(queueIdOf("webhooks")));
    expect(mapping?.Properties).toMatchObject({
      BatchSize: WEBHOOK_CAPACITY.batchSize,
      ScalingConfig: { MaximumConcurrency: WEBHOOK_CAPACITY.maxConcurrency },
    });
    const queues = template.findResources("AWS::SQS::Queue", {
      Properties: { RedrivePolicy: Match.anyValue() },
    }) as Record<string, Resource>;
    const [, queue] = Object.entries(queues).find(([id]) => id.includes("webhooks")) ?? [];
    // Even a batch whose records all waited their whole timeout, one after another, is done
    // before its messages become visible again.
    expect(queue?.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(
      (WEBHOOK_CAPACITY.attemptTimeoutMs / 1000) * WEBHOOK_CAPACITY.batchSize,
    );
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

  it("lets only the webhooks worker send email, as MAIL_FROM through its SES identity", () => {
    const identity = (name: string) => ({
      "Fn::Join": [
        "",
        [
          "arn:",
          { Ref: "AWS::Partition" },
          ":ses:",
          { Ref: "AWS::Region" },
          ":",
          { Ref: "AWS::AccountId" },
          `:identity/${name}`,
        ],
      ],
    });
    const sends = [...apiFunctions, ...queueWorkers, ...scheduledFunctions].filter((fn) =>
      statementsOf(fn.name).some((st) => JSON.stringify(st.Action).includes("ses:")),
    );
    expect(sends.map((fn) => fn.name)).toEqual(["webhooks-worker"]);
    const [statement] = statementsOf("webhooks-worker").filter((st) =>
      JSON.stringify(st.Action).includes("ses:"),
    );
    expect(statement).toEqual({
      Effect: "Allow",
      Action: "ses:SendEmail",
      Resource: [identity("digests@mail.example.com"), identity("mail.example.com")],
      Condition: { StringEquals: { "ses:FromAddress": "digests@mail.example.com" } },
    });
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
        "lambda:InvokeFunction",
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
      ],
      "webhooks-api": [...write, "kms:GenerateDataKey"],
      // A presigned download URL is a read of the bundle, signed with the function's role.
      "exports-api": [...write, ...list, "s3:GetObject"],
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
        "lambda:InvokeFunction",
      ],
      "crawl-worker": [...write, ...consume, ...list, "s3:PutObject", "lambda:InvokeFunction"],
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
        "lambda:InvokeFunction",
        "s3:DeleteObject",
        "s3:GetObject",
        "s3:PutObject",
        "s3:PutObjectTagging",
      ],
      "webhooks-worker": [...write, ...consume, "kms:Decrypt", "ses:SendEmail"],
      "export-worker": [...write, ...consume, ...list, "s3:GetObject", "s3:PutObject"],
      watchdog: [...write, ...list, "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
      "competitor-sweep": [...read],
      "competitor-digest": [...read],
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
        // A statement may name other actions on the same queues (IAM policies are minimized).
        .filter((st) => [st.Action].flat().includes("sqs:SendMessage"))
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
            /\/(ws\/\*\/(kb|competitors)\/\*\/\*|uploads\/ws\/\*\/kb\/\*\/upload|search\/\*|exports\/ws\/\*\/\*)"/,
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

/** Everything the CDK names `kb-intel-<stage>`: the stack test's stage. */
const PREFIX = `kb-intel-${STAGE}`;
const allFunctions = () => [...apiFunctions, ...queueWorkers, ...scheduledFunctions];
type MetricStat = {
  Metric: { MetricName: string; Namespace: string; Dimensions?: unknown[] };
  Stat: string;
  Period: number;
};
type MathAlarm = { Metrics?: Array<{ Id: string; Expression?: string; MetricStat?: MetricStat }> };

/** An alarm by its name (after the stage's prefix); failing the test when there is none. */
function alarm(name: string): Record<string, unknown> {
  const found = alarmsByName().get(`${PREFIX} ${name}`);
  if (!found) throw new Error(`no alarm "${PREFIX} ${name}"`);
  return found;
}

/** The metrics a metric-math alarm reads. */
const mathMetrics = (a: Record<string, unknown>) =>
  ((a as MathAlarm).Metrics ?? []).flatMap((m) => (m.MetricStat ? [m.MetricStat] : []));
const expressionOf = (a: Record<string, unknown>) =>
  ((a as MathAlarm).Metrics ?? []).find((m) => m.Expression)?.Expression;

/** The parts of AWS WAF's statements the tests read. */
type WafStatement = {
  ManagedRuleGroupStatement?: {
    VendorName: string;
    Name: string;
    RuleActionOverrides?: Array<{ Name: string; ActionToUse: unknown }>;
  };
  RateBasedStatement?: { Limit: number; AggregateKeyType: string; ScopeDownStatement?: unknown };
  AndStatement?: { Statements: WafStatement[] };
  OrStatement?: { Statements: WafStatement[] };
  NotStatement?: { Statement: WafStatement };
  LabelMatchStatement?: { Key: string };
  RegexMatchStatement?: { RegexString: string };
};
type WafRule = { Name: string; Priority: number; Statement: WafStatement; Action?: unknown };

/** The WebACL's rules. */
function wafRules(): WafRule[] {
  const acl = Object.values(
    template.findResources("AWS::WAFv2::WebACL") as Record<string, Resource>,
  )[0] as Resource;
  return acl.Properties.Rules as WafRule[];
}

/** A resource of the template, as the deploys' tests read it. */
type CfnResource = {
  Type: string;
  Properties: Record<string, unknown>;
  DependsOn?: string[];
  DeletionPolicy?: string;
  UpdatePolicy?: { CodeDeployLambdaAliasUpdate: { DeploymentGroupName: { Ref: string } } };
};
const resources = () => template.toJSON().Resources as Record<string, CfnResource>;
const getAtt = (value: unknown) => (value as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"];

describe("the edge", () => {
  it("serves the API from a regional endpoint, named after its stage and throttled by the settings", () => {
    template.hasResourceProperties("AWS::ApiGateway::RestApi", {
      Name: PREFIX,
      EndpointConfiguration: { Types: ["REGIONAL"] },
    });
    template.hasResourceProperties("AWS::ApiGateway::Stage", {
      StageName: "v1",
      MethodSettings: Match.arrayWith([
        Match.objectLike({
          HttpMethod: "*",
          ResourcePath: "/*",
          ThrottlingRateLimit: pinned.API_THROTTLE_RATE,
          ThrottlingBurstLimit: pinned.API_THROTTLE_BURST,
        }),
      ]),
    });
  });

  it("puts a regional WebACL on the stage: AWS's managed rules and rate limits per address", () => {
    template.resourceCountIs("AWS::WAFv2::WebACL", 1);
    const [id, acl] = Object.entries(
      template.findResources("AWS::WAFv2::WebACL") as Record<string, Resource>,
    )[0] as [string, Resource];
    expect(acl.Properties).toMatchObject({
      Name: PREFIX,
      Scope: "REGIONAL",
      DefaultAction: { Allow: {} },
    });
    const rule = (name: string) => {
      const found = wafRules().find((r) => r.Name === name);
      if (!found) throw new Error(`no rule ${name}`);
      return found;
    };
    for (const group of [
      "AWSManagedRulesCommonRuleSet",
      "AWSManagedRulesKnownBadInputsRuleSet",
      "AWSManagedRulesAmazonIpReputationList",
    ]) {
      expect(rule(group).Statement.ManagedRuleGroupStatement).toMatchObject({
        VendorName: "AWS",
        Name: group,
      });
    }
    // The common rule set's body rules are counted, SizeRestrictions_BODY first of all (it blocks
    // any body over 8 KB: every multipart upload); the next rule blocks them again elsewhere.
    const overrides = rule("AWSManagedRulesCommonRuleSet").Statement.ManagedRuleGroupStatement
      ?.RuleActionOverrides;
    expect(overrides).toEqual(
      COUNTED_BODY_RULES.map((name) => ({ Name: name, ActionToUse: { Count: {} } })),
    );
    expect(overrides?.map((o) => o.Name)).toContain("SizeRestrictions_BODY");

    const tooMany = {
      Block: { CustomResponse: { ResponseCode: 429, CustomResponseBodyKey: "rate-limited" } },
    };
    expect(rule("rate-per-address")).toMatchObject({
      Action: tooMany,
      Statement: {
        RateBasedStatement: { Limit: Number(OVERRIDES.WAF_RATE_LIMIT), AggregateKeyType: "IP" },
      },
    });
    const anonymous = rule("rate-anonymous");
    expect(anonymous).toMatchObject({
      Action: tooMany,
      Statement: {
        RateBasedStatement: { Limit: pinned.WAF_ANONYMOUS_RATE_LIMIT, AggregateKeyType: "IP" },
      },
    });
    const scopeDown = JSON.stringify(anonymous.Statement.RateBasedStatement?.ScopeDownStatement);
    expect(scopeDown).toContain(
      '"NotStatement":{"Statement":{"ByteMatchStatement":{"FieldToMatch":{"SingleHeader":{"Name":"authorization"}}',
    );
    expect(scopeDown).toContain('"SearchString":"OPTIONS"');
    expect(pinned.WAF_ANONYMOUS_RATE_LIMIT).toBeLessThan(pinned.WAF_RATE_LIMIT as number);
    // The rate rules count before the managed groups can block what they would count.
    expect(rule("rate-per-address").Priority).toBeLessThan(
      rule("AWSManagedRulesCommonRuleSet").Priority,
    );

    template.hasResourceProperties("AWS::WAFv2::WebACLAssociation", {
      WebACLArn: { "Fn::GetAtt": [id, "Arn"] },
      ResourceArn: Match.objectLike({
        "Fn::Join": ["", Match.arrayWith([{ Ref: Match.stringLikeRegexp("ApiDeploymentStage") }])],
      }),
    });
  });

  it("blocks the body rules' matches on every route that takes no body", () => {
    const rule = wafRules().find((r) => r.Name === "body-rules-outside-body-routes");
    expect(rule?.Action).toEqual({ Block: {} });
    const [labels, outside] = rule?.Statement.AndStatement?.Statements ?? [];
    expect(labels?.OrStatement?.Statements.map((s) => s.LabelMatchStatement?.Key)).toEqual(
      COUNTED_BODY_RULES.map(
        (name) => `awswaf:managed:aws:core-rule-set:${name.replace(/_BODY$/, "_Body")}`,
      ),
    );
    expect(labels?.OrStatement?.Statements.map((s) => s.LabelMatchStatement?.Key)).toContain(
      "awswaf:managed:aws:core-rule-set:SizeRestrictions_Body",
    );
    const pattern = String(outside?.NotStatement?.Statement.RegexMatchStatement?.RegexString);
    const routes = apiFunctions.flatMap((fn) => fn.routes);
    expect(pattern).toBe(bodyRoutesPattern(routes, "/v1"));
    expect(pattern).not.toMatch(/\((?!\?:)/); // AWS WAF takes no capturing group
    const regex = new RegExp(pattern);
    const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "x_1");
    for (const route of routes.filter((r) => r.request?.body)) {
      for (const path of [concrete(route.path), `/v1${concrete(route.path)}`]) {
        expect(regex.test(path), `${route.method} ${path}`).toBe(true);
      }
    }
    // The multipart upload route is among them.
    expect(regex.test("/v1/api/knowledge")).toBe(true);
    for (const path of [
      "/v1/api/webhooks/x_1/test",
      "/v1/health",
      "/v1/docs",
      "/",
      "/v1/api/knowledge/x_1/reindex",
    ]) {
      expect(regex.test(path), path).toBe(false);
    }
  });
});

describe("deploys", () => {
  it("invokes a live alias of every API function and worker, moved by a CodeDeploy canary that rolls back on the new version's alarms", () => {
    for (const fn of [...apiFunctions, ...queueWorkers]) {
      const alias = resources()[aliasId(fn.name)] as CfnResource;
      const [versionId] = getAtt(alias.Properties.FunctionVersion);
      expect(resources()[versionId]).toMatchObject({
        Type: "AWS::Lambda::Version",
        Properties: { FunctionName: { Ref: functionId(fn.name) } },
        // The replaced version is deleted once a deploy succeeds.
        DeletionPolicy: "Delete",
      });
      const update = alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate;
      const group = resources()[update?.DeploymentGroupName.Ref ?? ""] as CfnResource;
      expect(group.Properties, fn.name).toMatchObject({
        DeploymentConfigName: "CodeDeployDefault.LambdaCanary10Percent5Minutes",
        AutoRollbackConfiguration: {
          Enabled: true,
          Events: expect.arrayContaining(["DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_ALARM"]),
        },
        AlarmConfiguration: { Enabled: true },
      });
      const errors = alarm(`deploy errors ${fn.name}`);
      const latency = alarm(`deploy latency ${fn.name}`);
      const ids = [errors, latency].map((a) => {
        const [id] = Object.entries(resources()).find(
          ([, r]) => r.Type === "AWS::CloudWatch::Alarm" && r.Properties.AlarmName === a.AlarmName,
        ) ?? [""];
        return id;
      });
      expect(group.Properties.AlarmConfiguration).toEqual({
        Enabled: true,
        Alarms: ids.map((id) => ({ Name: { Ref: id } })),
      });
      // The alarms move to the new version before the alias does.
      expect(alias.DependsOn).toEqual(expect.arrayContaining(ids));
      const version = { Name: "ExecutedVersion", Value: { "Fn::GetAtt": [versionId, "Version"] } };
      expect(errors).toMatchObject({
        MetricName: "Errors",
        Statistic: "Sum",
        Period: 60,
        Threshold: 1,
      });
      expect(errors.Dimensions).toContainEqual(version);
      expect(JSON.stringify(errors.Dimensions)).toContain(':live"');
      const api = apiFunctions.some((f) => f.name === fn.name);
      expect(latency).toMatchObject({
        MetricName: "Duration",
        ExtendedStatistic: api ? "p95" : "p99",
        Threshold: api
          ? apiLatencyP95Ms(fn.name)
          : Math.round((fn as { timeoutSeconds: number }).timeoutSeconds * 1000 * NEAR_TIMEOUT),
      });
      expect(latency.Dimensions).toContainEqual(version);
      // CodeDeploy reads them; they notify no one.
      expect(errors.AlarmActions).toBeUndefined();
    }
    // A scheduled run is one invocation: nothing to shift, no alias.
    for (const fn of scheduledFunctions) {
      expect(
        Object.keys(
          template.findResources("AWS::Lambda::Alias", {
            Properties: { FunctionName: { Ref: functionId(fn.name) } },
          }),
        ),
      ).toEqual([]);
    }
  });

  it("names the stack after its stage, and sets no name without the stage in it", () => {
    expect(stack.stackName).toBe(`KbIntel-${STAGE}`);
    // Names that live inside their parent, or name what AWS defines, not a resource of the stack.
    const inside: Record<string, string[]> = {
      "AWS::Lambda::Alias": ["Name"],
      "AWS::IAM::Policy": ["PolicyName"],
      "AWS::ApiGateway::Stage": ["StageName"],
      "AWS::CloudWatch::Alarm": ["MetricName"],
      "AWS::CodeDeploy::DeploymentGroup": ["DeploymentConfigName"],
    };
    const fixed: string[] = [];
    const named: string[] = [];
    for (const [id, r] of Object.entries(resources())) {
      for (const [key, value] of Object.entries((r.Properties ?? {}) as Record<string, unknown>)) {
        if (!/Name$/.test(key) || inside[r.Type]?.includes(key)) continue;
        // A token: a name built from one CloudFormation generated (`API-Gateway-Execution-Logs_<id>`).
        if (typeof value !== "string") continue;
        named.push(`${r.Type}.${key}`);
        if (!value.includes(`-${STAGE}`)) fixed.push(`${id} ${r.Type}.${key}: ${value}`);
      }
    }
    expect(fixed).toEqual([]);
    expect(named).toEqual(
      expect.arrayContaining([
        "AWS::CloudWatch::Alarm.AlarmName",
        "AWS::CloudWatch::Dashboard.DashboardName",
        "AWS::ApiGateway::RestApi.Name",
        "AWS::WAFv2::WebACL.Name",
      ]),
    );
    // No physical names where CloudFormation can make them up.
    for (const [type, key] of [
      ["AWS::DynamoDB::Table", "TableName"],
      ["AWS::S3::Bucket", "BucketName"],
      ["AWS::SQS::Queue", "QueueName"],
      ["AWS::Lambda::Function", "FunctionName"],
      ["AWS::IAM::Role", "RoleName"],
      ["AWS::SNS::Topic", "TopicName"],
      ["AWS::CodeDeploy::Application", "ApplicationName"],
      ["AWS::CodeDeploy::DeploymentGroup", "DeploymentGroupName"],
    ] as const) {
      for (const r of Object.values(template.findResources(type) as Record<string, Resource>)) {
        expect(r.Properties[key], `${type}.${key}`).toBeUndefined();
      }
    }
  });

  it("stays within CloudFormation's 500 resources per stack", () => {
    // Every route adds two (its resource and method, its preflight a third), every function about
    // ten with its alarms: 426 after issues 26–31. The next large addition moves the alarms or
    // the API's routes into a nested stack (docs/operations.md).
    expect(Object.keys(resources()).length).toBeLessThan(450);
  });

  it("pins in cdk.json every feature flag this aws-cdk-lib recommends, and the stack is built with them", () => {
    const missing = Object.entries(CURRENTLY_RECOMMENDED_FLAGS).filter(
      ([flag, value]) => JSON.stringify(CDK_JSON.context[flag]) !== JSON.stringify(value),
    );
    expect(missing.map(([flag]) => flag)).toEqual([]);
    expect(Object.keys(CURRENTLY_RECOMMENDED_FLAGS).length).toBeGreaterThan(50);
    expect(stack.node.tryGetContext("@aws-cdk/aws-iam:minimizePolicies")).toBe(true);
  });

  it("lets Lambda stop recursive loops, except through the workers whose manifest entry allows theirs", () => {
    for (const fn of allFunctions()) {
      const recursion = (fn as { recursion?: { allow: boolean } }).recursion;
      expect(resources()[functionId(fn.name)]?.Properties.RecursiveLoop, fn.name).toBe(
        recursion?.allow ? "Allow" : "Terminate",
      );
    }
    // Allowed exactly where a worker sends to the queue it consumes, with why and what bounds it.
    for (const worker of queueWorkers) {
      const loops = (worker.access.sends ?? []).includes(worker.queue);
      expect(Boolean(worker.recursion?.allow), worker.name).toBe(loops);
      if (loops) {
        expect(worker.recursion?.why.length, worker.name).toBeGreaterThan(20);
        expect(worker.recursion?.bound.length, worker.name).toBeGreaterThan(20);
      }
    }
    expect(queueWorkers.filter((w) => w.recursion?.allow).map((w) => w.name)).toEqual([
      "index-worker",
      "crawl-worker",
      "competitor-check-worker",
      "webhooks-worker",
      "export-worker",
    ]);
  });
});

describe("the alarms", () => {
  it("alarm on new dead letters, not on how many there are", () => {
    for (const queue of [...QUEUES, "schedules"]) {
      const a = alarm(`dead letters ${queue}`);
      expect(expressionOf(a), queue).toBe("DIFF(FILL(visible, 0))");
      expect(mathMetrics(a)).toEqual([
        expect.objectContaining({
          Metric: expect.objectContaining({
            MetricName: "ApproximateNumberOfMessagesVisible",
            Namespace: "AWS/SQS",
          }),
          Stat: "Maximum",
          Period: 60,
        }),
      ]);
      expect(a).toMatchObject({
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        EvaluationPeriods: 2,
        DatapointsToAlarm: 1,
      });
    }
  });

  it("alarm on queue age, where a capped worker shows, and on throttles only where Lambda throttles", () => {
    for (const queue of QUEUES) {
      expect(alarm(`queue age ${queue}`).MetricName, queue).toBe("ApproximateAgeOfOldestMessage");
    }
    for (const fn of [...apiFunctions, ...scheduledFunctions]) {
      expect(alarm(`throttles ${fn.name}`).MetricName, fn.name).toBe("Throttles");
    }
    for (const worker of queueWorkers) {
      expect(alarmsByName().has(`${PREFIX} throttles ${worker.name}`), worker.name).toBe(false);
    }
  });

  it("alarm per function on errors and on a duration near its timeout, and on each API function's latency", () => {
    for (const fn of allFunctions()) {
      const own = [{ Name: "FunctionName", Value: { Ref: functionId(fn.name) } }];
      expect(alarm(`errors ${fn.name}`)).toMatchObject({ MetricName: "Errors", Dimensions: own });
      const timeout = (fn as { timeoutSeconds?: number }).timeoutSeconds ?? 29;
      expect(alarm(`near timeout ${fn.name}`), fn.name).toMatchObject({
        MetricName: "Duration",
        ExtendedStatistic: "p99",
        Dimensions: own,
        Threshold: timeout * 1000 * NEAR_TIMEOUT,
        ComparisonOperator: "GreaterThanThreshold",
      });
    }
    for (const fn of apiFunctions) {
      expect(alarm(`latency ${fn.name}`), fn.name).toMatchObject({
        MetricName: "Duration",
        ExtendedStatistic: "p95",
        Dimensions: [{ Name: "FunctionName", Value: { Ref: functionId(fn.name) } }],
        Threshold: apiLatencyP95Ms(fn.name),
        EvaluationPeriods: 3,
      });
    }
    // Chat (intel-api) is slow by nature and has its own threshold; no alarm on the API's p95.
    const chat = apiFunctions.find((fn) => fn.routes.some((r) => r.path === "/api/chat"));
    expect(chat?.name).toBe("intel-api");
    expect(API_LATENCY_P95_MS["intel-api"]).toBeGreaterThan(apiLatencyP95Ms("knowledge-api"));
    expect([...alarmsByName().values()].filter((a) => a.MetricName === "Latency")).toEqual([]);
  });

  it("alarm when Lambda stops a loop through a worker that may not loop", () => {
    for (const worker of queueWorkers) {
      const name = `${PREFIX} recursion stopped ${worker.name}`;
      expect(alarmsByName().get(name)?.MetricName, worker.name).toBe(
        worker.recursion?.allow ? undefined : "RecursiveInvocationsDropped",
      );
    }
  });

  it("alarm on DynamoDB throttles of the table and its indexes", () => {
    const a = alarm("table throttles");
    const read = mathMetrics(a).map((m) => [
      m.Metric.MetricName,
      JSON.stringify(m.Metric.Dimensions),
    ]);
    for (const kind of ["ReadThrottleEvents", "WriteThrottleEvents"]) {
      expect(read.filter(([name]) => name === kind).map(([, dims]) => dims)).toEqual([
        expect.not.stringContaining("GlobalSecondaryIndexName"),
        expect.stringContaining('"Value":"gsi1"'),
        expect.stringContaining('"Value":"gsi2"'),
      ]);
    }
    expect(expressionOf(a)).toMatch(/^SUM\(\[FILL\(read0, 0\),/);
    expect(a).toMatchObject({ Threshold: 1, EvaluationPeriods: 2 });
  });

  it("alarm on the API's 429s and on the firewall's rate-based blocks", () => {
    template.hasResourceProperties("AWS::Logs::MetricFilter", {
      FilterPattern: '{ $.status = "429" }',
      MetricTransformations: [
        Match.objectLike({ MetricName: "Throttled", MetricNamespace: PREFIX, MetricValue: "1" }),
      ],
    });
    expect(alarm("api 429s")).toMatchObject({
      MetricName: "Throttled",
      Namespace: PREFIX,
      Statistic: "Sum",
      Threshold: API_429_PER_5_MINUTES,
    });
    for (const [name, rule] of [
      ["rate limited address", "rate-per-address"],
      ["rate limited anonymous", "rate-anonymous"],
    ]) {
      const a = alarm(name as string);
      expect(a).toMatchObject({
        Namespace: "AWS/WAFV2",
        MetricName: "BlockedRequests",
        Threshold: 1,
      });
      expect(a.Dimensions).toEqual(
        expect.arrayContaining([
          { Name: "WebACL", Value: PREFIX },
          { Name: "Rule", Value: rule },
        ]),
      );
    }
    expect(alarm("api 5xx rate")).toMatchObject({ MetricName: "5XXError", Statistic: "Average" });
  });

  it("alarm when most of an hour's sources or competitor checks fail, on the metrics the service writes", () => {
    const source = readFileSync(new URL("../../../lib/metrics.ts", import.meta.url), "utf8");
    expect(source).toContain(`namespace: "${BUSINESS.namespace}"`);
    expect(source).toContain(`serviceName: "${BUSINESS.dimensions.service}"`);
    for (const { what, failed, succeeded } of BUSINESS.failing) {
      expect(source).toMatch(new RegExp(`^\\s+${failed}: MetricUnit`, "m"));
      expect(source).toMatch(new RegExp(`^\\s+${succeeded}: MetricUnit`, "m"));
      const a = alarm(what);
      expect(mathMetrics(a).map((m) => m.Metric)).toEqual([
        {
          MetricName: failed,
          Namespace: "kb-intel",
          Dimensions: [{ Name: "service", Value: "kb-intel" }],
        },
        {
          MetricName: succeeded,
          Namespace: "kb-intel",
          Dimensions: [{ Name: "service", Value: "kb-intel" }],
        },
      ]);
      expect(expressionOf(a)).toMatch(/^IF\(FILL\(failed, 0\) >= 3, /);
      expect(a).toMatchObject({ Threshold: 0.5, ComparisonOperator: "GreaterThanThreshold" });
    }
  });

  it("send every alarm but the deploys' to one topic, and go on one dashboard named after the stage", () => {
    template.resourceCountIs("AWS::SNS::Topic", 1);
    const topic = Object.keys(template.findResources("AWS::SNS::Topic"))[0];
    const alarms = [...alarmsByName()];
    const deploys = alarms.filter(([name]) => name.startsWith(`${PREFIX} deploy `));
    expect(deploys).toHaveLength((apiFunctions.length + queueWorkers.length) * 2);
    for (const [name, a] of alarms) {
      expect(name.startsWith(`${PREFIX} `), name).toBe(true);
      if (deploys.some(([n]) => n === name)) continue;
      expect(a.AlarmActions, name).toEqual([{ Ref: topic }]);
      expect(a.OKActions, name).toEqual([{ Ref: topic }]);
      expect(a.TreatMissingData, name).toBe("notBreaching");
    }
    const functions = allFunctions().length;
    const notifying =
      QUEUES.length +
      1 + // dead letters
      QUEUES.length + // queue age
      4 + // api 5xx, api 429s, two rate rules
      apiFunctions.length + // latency
      functions * 2 + // errors, near timeout
      apiFunctions.length +
      scheduledFunctions.length + // throttles
      queueWorkers.filter((w) => !w.recursion?.allow).length + // recursion stopped
      1 + // table throttles
      BUSINESS.failing.length;
    expect(alarms.length - deploys.length).toBe(notifying);
    template.resourceCountIs("AWS::CloudWatch::Dashboard", 1);
    template.hasResourceProperties("AWS::CloudWatch::Dashboard", { DashboardName: PREFIX });
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
        new KbIntelStack(cdkApp(), "Test", { bundles: again, settings }),
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
    "%s stays under 1,360 KiB minified, without jsdom",
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
  // The search engine's linux-arm64 binary, measured below, is fetched as a synth fetches it at
  // first use (once per checkout, from the npm registry: 59 MB) unless this machine is linux-arm64.
  beforeAll(() => fetchPlatformPackages(), 300_000);
  const bytesIn = async (dir: string) => {
    let total = 0;
    for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
      if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
    }
    return total;
  };

  // What the search engine and jsdom add to each function, measured: the consequences of
  // docs/decisions/0001-search-engine.md. The index worker, with both, is the closest to the limit.
  it.each(
    [...apiFunctions, ...queueWorkers, ...scheduledFunctions, ...invokedFunctions].map(
      (fn: BundleRequest) => [fn.name, fn] as const,
    ),
  )("%s fits Lambda's 250 MB unzipped with the packages copied beside it", async (name, fn) => {
    const bundle = bundles.get(name);
    if (!bundle) throw new Error(`no bundle for ${name}`);
    const size = (await bytesIn(bundle.dir)) + (await nodeModulesBytes(fn.nodeModules ?? []));
    expect(size).toBeGreaterThan(bundle.bytes);
    expect(size).toBeLessThan(LAMBDA_UNZIPPED);
  });
});

describe("data protection", () => {
  type Full = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };
  const ofType = (t: Template, type: string) =>
    Object.values(t.toJSON().Resources as Record<string, Full>).filter((r) => r.Type === type);
  /** The stack as a dev stage that turned both off builds it. */
  const unprotected = () =>
    Template.fromStack(
      new KbIntelStack(cdkApp(), "Unprotected", {
        bundles,
        settings: deploySettings(pinned, {
          ...OVERRIDES,
          DELETION_PROTECTION: "false",
          BACKUPS: "false",
        }),
      }),
    );

  it("are on in the committed settings", () => {
    expect(pinned).toMatchObject({ DELETION_PROTECTION: true, BACKUPS: true });
    expect(deploySettings(pinned).dataProtection).toEqual({
      deletionProtection: true,
      backups: true,
    });
    // Left out of the file, they are on too.
    const { DELETION_PROTECTION, BACKUPS, ...bare } = pinned;
    expect(deploySettings(bare).dataProtection).toEqual({
      deletionProtection: true,
      backups: true,
    });
    expect(() => deploySettings(pinned, { BACKUPS: "nope" })).toThrow(/BACKUPS: nope/);
  });

  it("keep the table from deletion, and back it up daily and monthly into a vault of its own", () => {
    const [table] = ofType(template, "AWS::DynamoDB::Table");
    expect(table?.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table?.DeletionPolicy).toBe("Retain");
    expect(ofType(template, "AWS::S3::Bucket")[0]?.DeletionPolicy).toBe("Retain");

    const [vault] = ofType(template, "AWS::Backup::BackupVault");
    expect(vault?.Properties.BackupVaultName).toBe(`${PREFIX}-backups`);
    expect(vault?.DeletionPolicy).toBe("Retain");
    const plans = ofType(template, "AWS::Backup::BackupPlan");
    expect(plans).toHaveLength(1);
    const plan = plans[0]?.Properties.BackupPlan as {
      BackupPlanRule: Array<Record<string, unknown>>;
    };
    const rules = plan.BackupPlanRule;
    expect(rules.map((r) => [r.RuleName, r.ScheduleExpression, r.Lifecycle])).toEqual(
      BACKUP_RULES.map((rule) => [
        rule.name,
        expect.stringMatching(/^cron\(/),
        { DeleteAfterDays: rule.keepDays },
      ]),
    );
    expect(Math.min(...BACKUP_RULES.map((r) => r.keepDays))).toBeGreaterThanOrEqual(35);
    for (const rule of rules) {
      expect(rule.TargetBackupVault).toEqual({
        "Fn::GetAtt": [expect.stringMatching(/^StorageBackupVault/), "BackupVaultName"],
      });
    }
    const [selection] = ofType(template, "AWS::Backup::BackupSelection");
    expect(JSON.stringify(selection?.Properties.BackupSelection)).toMatch(
      /"Resources":\[\{"Fn::GetAtt":\["StorageTable[0-9A-F]+","Arn"\]\}\]/,
    );
  });

  it("seal webhook secrets under a KMS key of the stage that rotates, kept with the table", () => {
    const keys = ofType(template, "AWS::KMS::Key");
    expect(keys).toHaveLength(1);
    expect(keys[0]?.Properties.EnableKeyRotation).toBe(true);
    expect(keys[0]?.DeletionPolicy).toBe("Retain");
    template.hasResourceProperties("AWS::KMS::Alias", { AliasName: `alias/${PREFIX}-data` });
    const keyId = Object.keys(template.findResources("AWS::KMS::Key"))[0] as string;
    for (const fn of ourFunctions()) {
      expect(fn.Properties.Environment.Variables.DATA_KEY_ID).toEqual({
        "Fn::GetAtt": [keyId, "Arn"],
      });
    }
    // Only the webhooks functions may use it: the API to seal, the worker to open.
    const kms = (name: string) =>
      statementsOf(name).filter((st) => [st.Action].flat().some((a) => a.startsWith("kms:")));
    for (const fn of [...apiFunctions, ...queueWorkers, ...scheduledFunctions]) {
      const expected =
        fn.name === "webhooks-api"
          ? ["kms:GenerateDataKey"]
          : fn.name === "webhooks-worker"
            ? ["kms:Decrypt"]
            : [];
      expect(
        kms(fn.name).flatMap((st) => [st.Action].flat()),
        fn.name,
      ).toEqual(expected);
      for (const st of kms(fn.name)) {
        expect(st.Resource, fn.name).toEqual({ "Fn::GetAtt": [keyId, "Arn"] });
      }
    }
  });

  it("are off, for a dev stage, when the settings say so", () => {
    const dev = unprotected();
    const [table] = ofType(dev, "AWS::DynamoDB::Table");
    expect(table?.Properties.DeletionProtectionEnabled).toBe(false);
    expect(table?.DeletionPolicy).toBe("Delete");
    expect(table?.Properties.PointInTimeRecoverySpecification).toEqual({
      PointInTimeRecoveryEnabled: true,
    });
    for (const type of [
      "AWS::Backup::BackupVault",
      "AWS::Backup::BackupPlan",
      "AWS::Backup::BackupSelection",
    ]) {
      expect(ofType(dev, type), type).toEqual([]);
    }
    expect(ofType(dev, "AWS::KMS::Key")[0]?.DeletionPolicy).toBe("Delete");
    // The bucket is kept either way: CloudFormation cannot delete a bucket that holds objects.
    expect(ofType(dev, "AWS::S3::Bucket")[0]?.DeletionPolicy).toBe("Retain");
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

describe("the deploy's stage and limits", () => {
  it("come from the file, `-c stage=` and `-c KEY=value`, and are checked", () => {
    const file = deploySettings(pinned);
    expect(file.stage).toBe(pinned.STAGE);
    expect(file.throttle).toEqual({
      rateLimit: pinned.API_THROTTLE_RATE,
      burstLimit: pinned.API_THROTTLE_BURST,
    });
    expect(file.waf).toEqual({
      rateLimit: pinned.WAF_RATE_LIMIT,
      anonymousRateLimit: pinned.WAF_ANONYMOUS_RATE_LIMIT,
    });
    expect(deploySettings(pinned, { stage: "prod" }).stage).toBe("prod");
    expect(deploySettings(pinned, { STAGE: "prod" }).stage).toBe("prod");
    // Without the file's values, a deploy is `dev` with the defaults.
    const bare = deploySettings({});
    expect(bare.stage).toBe("dev");
    expect(bare.throttle).toEqual({ rateLimit: 100, burstLimit: 200 });
    expect(bare.waf).toEqual({ rateLimit: 3000, anonymousRateLimit: 300 });
    expect(deploySettings(pinned, { API_THROTTLE_RATE: "50" }).throttle.rateLimit).toBe(50);
    for (const stage of ["Prod", "prod_1", "9prod", "a-very-long-stage-name"]) {
      expect(() => deploySettings(pinned, { stage }), stage).toThrow(/STAGE/);
    }
    expect(() => deploySettings(pinned, { WAF_RATE_LIMIT: "5" })).toThrow(/WAF_RATE_LIMIT/);
    expect(() => deploySettings(pinned, { API_THROTTLE_BURST: "lots" })).toThrow(
      /API_THROTTLE_BURST/,
    );
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
