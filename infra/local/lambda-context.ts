import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";

/**
 * A Lambda context for handlers the local runtime invokes, named as the manifest names the
 * function, with a deadline (15 minutes unless given) and its memory (1024 MB unless given).
 */
export function lambdaContext(
  functionName: string,
  timeoutMs = 15 * 60_000,
  memoryMb = 1024,
): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "local",
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
