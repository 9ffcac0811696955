import { Duration, RemovalPolicy, Validations } from "aws-cdk-lib";
import {
  AccessLogFormat,
  EndpointType,
  type IResource,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
} from "aws-cdk-lib/aws-apigateway";
import type { Metric } from "aws-cdk-lib/aws-cloudwatch";
import { FilterPattern, LogGroup, MetricFilter, RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import type { ApiFunction } from "../../../functions/manifest.js";
import { CORS_ALLOW_HEADERS } from "../../../lib/http/cors.js";
import { Firewall } from "./firewall.js";
import type { ServiceFunction } from "./service-function.js";

export interface ApiProps {
  functions: Array<{ spec: ApiFunction; fn: ServiceFunction }>;
  /** The names the API and its firewall go by (`kb-intel-<stage>`), and its metrics with them. */
  name: string;
  /** Steady-state requests per second across the API's stage, and the burst above it. */
  throttle: { rateLimit: number; burstLimit: number };
  /** AWS WAF's rate-based rules: requests per address per 5 minutes, any, and without a key. */
  waf: { rateLimit: number; anonymousRateLimit: number };
  /** Browser origins allowed to call the API (`*` for any); none answers no preflight. */
  corsOrigins: string[];
}

/** The API Gateway stage: the first part of the API's paths (`/v1/api/...`), not the deploy's stage. */
const STAGE = "v1";

/** The API's 429s, counted from its access log into a namespace named after the API (its stage's). */
export const THROTTLED_METRIC = "Throttled";

/** The service's error body; `$` is literal unless it names one of the gateway's variables. */
const errorBody = (code: string, message: string) =>
  JSON.stringify({ error: { code, message } }).replaceAll("$", "\\$");

/**
 * `Access-Control-Allow-Origin` of the gateway's own answers (errors before any function runs).
 * A gateway response cannot choose among origins, so with several allowed it echoes the caller's:
 * these answers carry no data, and the functions' answers still check the list.
 */
function gatewayCorsHeaders(origins: string[]): Record<string, string> {
  if (origins.length === 0) return {};
  if (origins.includes("*")) return { "Access-Control-Allow-Origin": "'*'" };
  if (origins.length === 1)
    return { "Access-Control-Allow-Origin": `'${origins[0]}'`, Vary: "'Origin'" };
  return {
    "Access-Control-Allow-Origin": "method.request.header.Origin",
    Vary: "'Origin'",
  };
}

/**
 * A REST API whose resources come from the functions' route definitions (the same ones that
 * validate requests and build the OpenAPI document). Each resource has one ANY method to the
 * function that owns its routes, so a method the function does not serve gets its 405 with
 * `Allow`, as locally. Gateway-level errors use the service's error body and CORS headers.
 */
export class Api extends Construct {
  readonly restApi: RestApi;
  readonly firewall: Firewall;
  /**
   * Answers 429 by API Gateway: the stage's throttle, a workspace's rate limit (the functions'),
   * and the firewall's rate-based rules. Counted from the access log: API Gateway's 4XXError does
   * not tell a 429 from a 401 or a 404, and the functions emit no metric of their refusals.
   */
  readonly throttled: Metric;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const accessLogs = new LogGroup(this, "AccessLogs", {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const cors = props.corsOrigins;
    this.restApi = new RestApi(this, "Api", {
      // The name is the API's metrics' dimension (ApiName): each stage's API has its own.
      restApiName: props.name,
      description: "Knowledge Base and Marketing Intel API",
      // Callers reach the region directly; an edge-optimized API would put a CloudFront
      // distribution of AWS's in front, which WAF, logs and throttles here do not see.
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      deployOptions: {
        stageName: STAGE,
        throttlingRateLimit: props.throttle.rateLimit,
        throttlingBurstLimit: props.throttle.burstLimit,
        loggingLevel: MethodLoggingLevel.ERROR,
        tracingEnabled: true,
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
      },
      // Preflights are answered by the gateway, without a key, for the allowed origins only.
      ...(cors.length > 0
        ? {
            defaultCorsPreflightOptions: {
              allowOrigins: cors,
              allowHeaders: CORS_ALLOW_HEADERS,
            },
          }
        : {}),
      // Binary uploads arrive base64-encoded in the event and hono/aws-lambda decodes them.
      binaryMediaTypes: ["multipart/form-data", "application/octet-stream"],
      cloudWatchRole: true,
    });
    // The stage's execution logs go to a group API Gateway names and would create without an
    // expiry: create it first, with one.
    const executionLogs = new LogGroup(this, "ExecutionLogs", {
      logGroupName: `API-Gateway-Execution-Logs_${this.restApi.restApiId}/${STAGE}`,
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.restApi.deploymentStage.node.addDependency(executionLogs);

    const owners = new Map<string, ServiceFunction>();
    for (const { spec, fn } of props.functions) {
      for (const route of spec.routes) {
        const owner = owners.get(route.path);
        if (owner && owner !== fn) {
          throw new Error(
            `${route.path} is served by two functions: ${owner.node.id}, ${spec.name}`,
          );
        }
        owners.set(route.path, fn);
      }
    }
    // Each integration invokes the function's `live` alias, which a deploy moves gradually. One
    // permission per alias lets this API invoke it (any of its methods), not two per method:
    // the stack stays well under CloudFormation's 500 resources, the alias's policy small.
    for (const [path, fn] of owners) {
      this.resourceFor(path).addMethod(
        "ANY",
        new LambdaIntegration(fn.live, { scopePermissionToMethod: false }),
      );
    }

    this.firewall = new Firewall(this, "Firewall", {
      name: props.name,
      stage: this.restApi.deploymentStage,
      stagePath: `/${STAGE}`,
      routes: props.functions.flatMap(({ spec }) => spec.routes),
      rateLimit: props.waf.rateLimit,
      anonymousRateLimit: props.waf.anonymousRateLimit,
    });

    const throttled = new MetricFilter(this, "ThrottledFilter", {
      logGroup: accessLogs,
      filterPattern: FilterPattern.stringValue("$.status", "=", "429"),
      metricNamespace: props.name,
      metricName: THROTTLED_METRIC,
      metricValue: "1",
    });
    this.throttled = throttled.metric({ statistic: "Sum", period: Duration.minutes(5) });

    const decisions: Array<[string, string]> = [
      ["AwsSolutions-APIG2", "Every function validates its requests with the routes' zod schemas."],
      [
        "AwsSolutions-APIG4",
        "Authorization is the functions': a bearer API key, hashed, checked before any work.",
      ],
      ["AwsSolutions-COG4", "No Cognito: callers are workspaces holding API keys, not users."],
      [
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
        "The account's role for API Gateway logging; AWS's managed policy is the documented one.",
      ],
    ];
    for (const [id, reason] of decisions) Validations.of(this.restApi).acknowledge({ id, reason });

    const headers = gatewayCorsHeaders(cors);
    const respond = (
      id: string,
      type: ResponseType,
      statusCode: string | undefined,
      template: string,
    ) =>
      this.restApi.addGatewayResponse(id, {
        type,
        ...(statusCode ? { statusCode } : {}),
        responseHeaders: headers,
        templates: { "application/json": template },
      });
    // API Gateway answers paths no route defines with 403 "Missing Authentication Token".
    respond(
      "UnknownRoute",
      ResponseType.MISSING_AUTHENTICATION_TOKEN,
      "404",
      errorBody("not_found", "No such route"),
    );
    respond(
      "Throttled",
      ResponseType.THROTTLED,
      "429",
      errorBody("rate_limited", "Too many requests; retry later"),
    );
    respond(
      "TooLarge",
      ResponseType.REQUEST_TOO_LARGE,
      "413",
      errorBody("payload_too_large", "The request body is too large"),
    );
    respond(
      "Timeout",
      ResponseType.INTEGRATION_TIMEOUT,
      "504",
      errorBody("upstream_timeout", "The service did not answer in time; retry later"),
    );
    respond(
      "UnsupportedMediaType",
      ResponseType.UNSUPPORTED_MEDIA_TYPE,
      "415",
      errorBody("unsupported_media_type", "The request's content type is not accepted"),
    );
    // Any other refusal or failure of the gateway itself, with its own status and message.
    respond(
      "Default4xx",
      ResponseType.DEFAULT_4XX,
      undefined,
      '{"error":{"code":"validation_failed","message":$context.error.messageString,"requestId":"$context.requestId"}}',
    );
    respond(
      "Default5xx",
      ResponseType.DEFAULT_5XX,
      undefined,
      '{"error":{"code":"internal_error","message":$context.error.messageString,"requestId":"$context.requestId"}}',
    );
  }

  private resourceFor(path: string): IResource {
    let resource: IResource = this.restApi.root;
    for (const part of path.split("/").filter(Boolean)) {
      resource = resource.getResource(part) ?? resource.addResource(part);
    }
    return resource;
  }
}
