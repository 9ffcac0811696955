import { readFileSync } from "node:fs";
import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";

/**
 * Runs the index worker's Lambda handler once in this process, as Lambda would: the SQS event
 * from the file named by argv[2], the function's environment from the parent. Prints one JSON
 * line: the batch response and the process's peak resident memory, threads included.
 */
const event = JSON.parse(readFileSync(process.argv[2] as string, "utf8")) as SQSEvent;
const { handler } = await import("../../functions/index-worker.js");
const context = { functionName: "index-worker", awsRequestId: "test" } as Context;
const response = (await handler(event, context, () => undefined)) as SQSBatchResponse;
const maxRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
process.stdout.write(`${JSON.stringify({ response, maxRssMb })}\n`);
process.exit(0);
