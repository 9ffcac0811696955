import {
  Cors,
  type IResource,
  LambdaIntegration,
  MethodLoggingLevel,
  ResponseType,
  RestApi,
} from "aws-cdk-lib/aws-apigateway";
import { Construct } from "constructs";
import type { ApiFunction } from "../../../functions/manifest.js";
import type { ServiceFunction } from "./service-function.js";

export interface ApiProps {
  functions: Array<{ spec: ApiFunction; fn: ServiceFunction }>;
  /** Steady-state requests per second across the API, and the burst above it. */
  throttle: { rateLimit: number; burstLimit: number };
}

const errorBody = (code: string, message: string) =>
  JSON.stringify({ error: { code, message } }).replaceAll("$", "\\$");

/**
 * A REST API whose resources and methods come from the functions' route definitions (the same
 * ones that validate requests and build the OpenAPI document), each method invoking the Lambda
 * that owns it. Gateway-level errors use the service's error body.
 */
export class Api extends Construct {
  readonly restApi: RestApi;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    this.restApi = new RestApi(this, "Api", {
      restApiName: "kb-intel",
      description: "Knowledge Base and Marketing Intel API",
      deployOptions: {
        stageName: "v1",
        throttlingRateLimit: props.throttle.rateLimit,
        throttlingBurstLimit: props.throttle.burstLimit,
        loggingLevel: MethodLoggingLevel.ERROR,
        tracingEnabled: true,
      },
      defaultCorsPreflightOptions: {
        allowOrigins: Cors.ALL_ORIGINS,
        allowHeaders: ["Authorization", "Content-Type"],
      },
      // Binary uploads arrive base64-encoded in the event and hono/aws-lambda decodes them.
      binaryMediaTypes: ["multipart/form-data", "application/octet-stream"],
      cloudWatchRole: true,
    });

    for (const { spec, fn } of props.functions) {
      const integration = new LambdaIntegration(fn);
      for (const route of spec.routes) {
        this.resourceFor(route.path).addMethod(route.method.toUpperCase(), integration);
      }
    }

    // API Gateway answers paths and methods no route defines with 403 "Missing Authentication Token".
    this.restApi.addGatewayResponse("UnknownRoute", {
      type: ResponseType.MISSING_AUTHENTICATION_TOKEN,
      statusCode: "404",
      templates: { "application/json": errorBody("not_found", "No such route") },
    });
    this.restApi.addGatewayResponse("Throttled", {
      type: ResponseType.THROTTLED,
      statusCode: "429",
      templates: {
        "application/json": errorBody("rate_limited", "Too many requests; retry later"),
      },
    });
    this.restApi.addGatewayResponse("TooLarge", {
      type: ResponseType.REQUEST_TOO_LARGE,
      statusCode: "413",
      templates: {
        "application/json": errorBody("payload_too_large", "The request body is too large"),
      },
    });
  }

  private resourceFor(path: string): IResource {
    let resource: IResource = this.restApi.root;
    for (const part of path.split("/").filter(Boolean)) {
      resource = resource.getResource(part) ?? resource.addResource(part);
    }
    return resource;
  }
}
