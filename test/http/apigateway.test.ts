import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

let rt: TestRuntime;
let handler: (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

beforeAll(async () => {
  rt = await startTestRuntime();
  // The same module the runtime loaded, entered the way API Gateway invokes it on AWS.
  handler = (await import("../../functions/knowledge-api.js")).handler as typeof handler;
});
afterAll(() => rt.close());

/** A REST API proxy event as API Gateway sends it, binary bodies base64-encoded. */
function restEvent(method: string, path: string, headers: Record<string, string>, body: Buffer) {
  return {
    httpMethod: method,
    path,
    resource: path,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      requestId: "apigw-req-1",
      httpMethod: method,
      path: `/v1${path}`,
      stage: "v1",
    },
    body: body.toString("base64"),
    isBase64Encoded: true,
  } as unknown as APIGatewayProxyEvent;
}

describe("the knowledge API behind API Gateway", () => {
  it("takes a multipart file upload that arrives base64-encoded", async () => {
    const form = new FormData();
    form.set(
      "file",
      new File(["# Launch plan\nWe launch in March with a webinar series."], "plan.md"),
    );
    const request = new Request("http://x/", { method: "POST", body: form });
    const body = Buffer.from(await request.arrayBuffer());
    const event = restEvent(
      "POST",
      "/api/knowledge",
      {
        authorization: `Bearer ${rt.key}`,
        "content-type": request.headers.get("content-type") as string,
        "content-length": String(body.length),
      },
      body,
    );
    const res = await handler(event, {} as Context);
    expect(res.statusCode).toBe(200);
    const created = JSON.parse(res.body) as { id: string; type: string; name: string };
    expect(created).toMatchObject({ type: "file", name: "plan.md" });
    // The request id is API Gateway's own, so its logs and ours meet.
    const requestId = res.headers?.["x-request-id"] ?? res.multiValueHeaders?.["x-request-id"]?.[0];
    expect(requestId).toBe("apigw-req-1");

    await rt.runtime.queues.idle();
    const search = await rt.call("/api/knowledge/search", {
      method: "POST",
      json: { query: "webinar series" },
    });
    const { results } = (await search.json()) as { results: Array<{ source_id: string }> };
    expect(results[0]?.source_id).toBe(created.id);
  });
});
