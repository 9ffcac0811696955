import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import {
  apiFunctions,
  QUEUES,
  queueWorkers,
  scheduledFunctions,
} from "../../../functions/manifest.js";
import { bundleAll } from "../../../infra/aws/bundle.js";
import { eventBridgeCron } from "../../../infra/aws/constructs/schedules.js";
import { KbIntelStack, settingsFrom } from "../../../infra/aws/stack.js";
import { MAX_RECEIVE_COUNT } from "../../../lib/config.js";

let template: Template;
let bundles: Awaited<ReturnType<typeof bundleAll>>;
type Resource = { Properties: Record<string, unknown> };

/**
 * Budget for an API function's minified bundle: small bundles keep cold starts short. Measured:
 * knowledge-api 483 KiB, intel-api 481 KiB, once each function's services were built from its own
 * composition file (one shared file had put the intel modules into knowledge-api, 503 KiB); about
 * 150 KB of knowledge-api is the openai SDK, of which it needs embeddings only, the next saving.
 * The search engine itself is installed beside the bundle, not in it.
 */
const API_BUNDLE_BUDGET = 500 * 1024;

beforeAll(async () => {
  bundles = await bundleAll(await mkdtemp(join(tmpdir(), "bundles-")), false);
  template = Template.fromStack(
    new KbIntelStack(new App(), "Test", {
      bundles,
      settings: settingsFrom({ LLM_MODEL: "gpt-test", TABLE_NAME: "ignored", PATH: "/bin" }),
      openAiKeySecret: "kb-intel/openai",
    }),
  );
}, 120_000);

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

describe("the stack", () => {
  it("routes every endpoint of every API function through API Gateway to that function", () => {
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
            m.Properties.HttpMethod === route.method.toUpperCase() &&
            path === route.path &&
            JSON.stringify(m.Properties.Integration).includes(functionId(fn.name))
          );
        });
        expect(match, `${route.method} ${route.path} -> ${fn.name}`).toBeDefined();
      }
    }
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
                  { Name: "prefix", Value: "ws/" },
                ]),
              },
            },
          }),
        ],
      },
    });
  });

  it("answers unknown routes with the service's 404 body and accepts binary uploads", () => {
    template.hasResourceProperties("AWS::ApiGateway::GatewayResponse", {
      ResponseType: "MISSING_AUTHENTICATION_TOKEN",
      StatusCode: "404",
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

  it("passes service settings on, keeps the model key out of the template, and manages its own names", () => {
    const functions = Object.values(
      template.findResources("AWS::Lambda::Function") as Record<string, Resource>,
    );
    const api = functions.find((f) => JSON.stringify(f.Properties).includes("LLM_MODEL"));
    const environment = api?.Properties.Environment as
      | { Variables: Record<string, unknown> }
      | undefined;
    const variables = environment?.Variables ?? {};
    expect(variables.LLM_MODEL).toBe("gpt-test");
    expect(variables.PATH).toBeUndefined();
    expect(variables.TABLE_NAME).toEqual({ Ref: expect.stringMatching(/^StorageTable/) });
    expect(JSON.stringify(variables.OPENAI_API_KEY)).toContain(
      "{{resolve:secretsmanager:kb-intel/openai",
    );
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

  it("keeps one private, encrypted, TLS-only bucket", () => {
    template.resourceCountIs("AWS::S3::Bucket", 1);
    template.hasResourceProperties("AWS::S3::Bucket", {
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

  it("runs each scheduled function on an EventBridge rule", () => {
    for (const fn of scheduledFunctions) {
      template.hasResourceProperties("AWS::Events::Rule", {
        ScheduleExpression: eventBridgeCron(fn.cron),
        Targets: [Match.objectLike({ Arn: { "Fn::GetAtt": [functionId(fn.name), "Arn"] } })],
      });
    }
  });

  it("grants each function only what the manifest lists", () => {
    const policies = Object.values(
      template.findResources("AWS::IAM::Policy") as Record<string, Resource>,
    );
    const policyOf = (name: string) =>
      JSON.stringify(
        policies.filter((p) =>
          JSON.stringify(p.Properties.Roles).includes(functionId(name).replace(/[0-9A-F]{8}$/, "")),
        ),
      );
    expect(policyOf("docs-api")).toMatch(/xray:PutTraceSegments/);
    expect(policyOf("docs-api")).not.toMatch(/dynamodb:|s3:|sqs:SendMessage/);
    expect(policyOf("knowledge-api")).toMatch(/sqs:SendMessage/);
    // The index worker sends only webhook deliveries (source.indexed, source.failed).
    expect(policyOf("index-worker")).toMatch(/sqs:SendMessage/);
    expect(policyOf("index-worker")).toMatch(/dynamodb:PutItem/);
  });
});

describe("the API bundles", () => {
  it.each(apiFunctions.map((fn) => [fn.name]))(
    "%s stays under 500 KB minified, without jsdom",
    (name) => {
      const bundle = bundles.get(name);
      expect(bundle?.bytes).toBeGreaterThan(0);
      expect(bundle?.bytes).toBeLessThan(API_BUNDLE_BUDGET);
      expect(bundle?.inputs.filter((input) => /node_modules\/jsdom\//.test(input))).toEqual([]);
    },
  );
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
