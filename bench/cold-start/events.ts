import { createHash, randomUUID } from "node:crypto";
import type { APIGatewayProxyEvent, ScheduledEvent, SQSEvent } from "aws-lambda";

/**
 * The events AWS hands each kind of function, built the way API Gateway (REST, proxy
 * integration), SQS and EventBridge shape them, so a bundle answers exactly what it would on AWS.
 */

const REGION = "us-east-1";
const ACCOUNT = "000000000000";

export interface HttpRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** An API Gateway REST API proxy event (payload 1.0), as `hono/aws-lambda` receives it. */
export function restEvent(request: HttpRequest): APIGatewayProxyEvent {
  const headers = { host: "api.example.com", accept: "application/json", ...request.headers };
  const now = Date.now();
  return {
    resource: "/{proxy+}",
    path: request.path,
    httpMethod: request.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: { proxy: request.path.slice(1) },
    stageVariables: null,
    body: request.body ?? null,
    isBase64Encoded: false,
    requestContext: {
      accountId: ACCOUNT,
      apiId: "bench",
      authorizer: {},
      protocol: "HTTP/1.1",
      httpMethod: request.method,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: "127.0.0.1",
        user: null,
        userAgent: "bench",
        userArn: null,
      },
      path: `/prod${request.path}`,
      stage: "prod",
      requestId: randomUUID(),
      requestTimeEpoch: now,
      resourceId: "bench",
      resourcePath: "/{proxy+}",
    },
  };
}

/** An SQS event source mapping's batch, one record per message body. */
export function sqsEvent(queue: string, bodies: string[]): SQSEvent {
  const now = String(Date.now());
  return {
    Records: bodies.map((body) => ({
      messageId: randomUUID(),
      receiptHandle: randomUUID(),
      body,
      attributes: {
        ApproximateReceiveCount: "1",
        SentTimestamp: now,
        SenderId: ACCOUNT,
        ApproximateFirstReceiveTimestamp: now,
      },
      messageAttributes: {},
      md5OfBody: createHash("md5").update(body).digest("hex"),
      eventSource: "aws:sqs",
      eventSourceARN: `arn:aws:sqs:${REGION}:${ACCOUNT}:${queue}`,
      awsRegion: REGION,
    })),
  };
}

/** An EventBridge schedule's event. */
export function scheduledEvent(rule: string): ScheduledEvent<Record<string, never>> {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: ACCOUNT,
    time: new Date().toISOString(),
    region: REGION,
    resources: [`arn:aws:events:${REGION}:${ACCOUNT}:rule/${rule}`],
    detail: {},
  };
}
