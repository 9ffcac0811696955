import { createHash, randomBytes } from "node:crypto";
import { InvokeStore, InvokeStoreBase } from "@aws/lambda-invoke-store";

/**
 * Lambda's recursive loop detection, as the local runtime models it. A chain of invocations
 * carries its lineage in the X-Ray trace header (`…;Lineage=<function>:<count>|…`): how many
 * times each function ran in it. Inside an invocation, the AWS SDK's recursion-detection
 * middleware copies the invocation's trace header onto every request (`X-Amzn-Trace-Id`), SQS
 * keeps it with each message it takes (`AWSTraceHeader`), and Lambda reads it again when the
 * message invokes a function: a function that ran MAX_RECURSIVE_INVOCATIONS times in the chain is
 * not invoked again unless its RecursiveLoop setting is Allow (queues.ts).
 *
 * The local runtime plays Lambda's Node.js runtime: it runs each invocation in its own context of
 * `@aws/lambda-invoke-store`, the per-invocation store Lambda keeps when one process runs several
 * invocations at once, and the SDK's own middleware reads the trace header from there. So the
 * lineage travels through the functions' unchanged SDK clients, on their requests, as on AWS; a
 * message sent without the SDK's middleware would lose it here as there.
 */

/** Invocations of one function in one chain that Lambda allows (RecursiveLoop: Terminate). */
export const MAX_RECURSIVE_INVOCATIONS = 16;

/** A function's entry in a lineage: a short hash of its name, as Lambda's is of its identity. */
const functionKey = (functionName: string) =>
  createHash("sha256").update(functionName).digest("hex").slice(0, 8);

/** Each function's count in a trace header's lineage (none without a header or a lineage). */
function lineageOf(traceHeader: string | undefined): Map<string, number> {
  const lineage = new Map<string, number>();
  const field = traceHeader
    ?.split(";")
    .map((part) => part.trim())
    .find((part) => part.startsWith("Lineage="));
  for (const entry of field?.slice("Lineage=".length).split("|") ?? []) {
    // `<hash>:<count>`, or with a leading format version, `1:<hash>:<count>`.
    const parts = entry.split(":");
    const [key, count] = [parts.at(-2), Number(parts.at(-1))];
    if (key && Number.isInteger(count) && count >= 0) {
      lineage.set(key, Math.max(lineage.get(key) ?? 0, count));
    }
  }
  return lineage;
}

/** How many times `functionName` ran in the chain that sent a message with this trace header. */
export const invocationsOf = (traceHeader: string | undefined, functionName: string): number =>
  lineageOf(traceHeader).get(functionKey(functionName)) ?? 0;

/** A new X-Ray trace id: `1-<epoch seconds, hex>-<96 random bits, hex>`. */
const newRoot = () =>
  `1-${Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, "0")}-${randomBytes(12).toString("hex")}`;

/**
 * The trace header of an invocation of `functionName` with messages that carry these headers: the
 * lineage of their chains (each function's largest count), this function's count one more, and
 * the trace of the first that has one. Answers the header and this function's count in it.
 */
export function invocationTrace(
  traceHeaders: Array<string | undefined>,
  functionName: string,
): { traceHeader: string; invocations: number } {
  const lineage = new Map<string, number>();
  for (const header of traceHeaders) {
    for (const [key, count] of lineageOf(header)) {
      lineage.set(key, Math.max(lineage.get(key) ?? 0, count));
    }
  }
  const key = functionKey(functionName);
  const invocations = (lineage.get(key) ?? 0) + 1;
  lineage.set(key, invocations);
  const root =
    traceHeaders
      .flatMap((header) => header?.split(";") ?? [])
      .map((part) => part.trim())
      .find((part) => part.startsWith("Root="))
      ?.slice("Root=".length) ?? newRoot();
  const entries = [...lineage].map(([k, count]) => `${k}:${count}`).join("|");
  return {
    traceHeader: `Root=${root};Parent=${randomBytes(8).toString("hex")};Sampled=0;Lineage=${entries}`,
    invocations,
  };
}

/**
 * Lambda's per-invocation store, in its form for concurrent invocations (one AsyncLocalStorage
 * context each). It must be the process's store before any SDK request asks for one: the store is
 * created once, by the first caller, so this module creates it when it loads.
 */
const invokeStore: InvokeStoreBase = await InvokeStore.getInstanceAsync(true);

/**
 * Readies the process for `withTraceHeader`: checks that the store keeps contexts apart, and sets
 * `AWS_LAMBDA_FUNCTION_NAME`, which the SDK's middleware requires before it copies a trace header
 * onto a request (it reads nothing else of it; on AWS it is the function's name).
 */
export function traceInvocations(): void {
  invokeStore.run({}, () => undefined);
  if (invokeStore.hasContext()) {
    throw new Error(
      "Lambda's invoke store was created for one invocation at a time, by an AWS SDK request made before infra/local/lineage.ts loaded; import the local runtime first",
    );
  }
  process.env.AWS_LAMBDA_FUNCTION_NAME ||= "kb-intel-local";
}

/** Runs `work` as an invocation with this trace header and request id, as Lambda's runtime does. */
export function withTraceHeader<T>(traceHeader: string, requestId: string, work: () => T): T {
  const { X_RAY_TRACE_ID, REQUEST_ID } = InvokeStoreBase.PROTECTED_KEYS;
  return invokeStore.run({ [X_RAY_TRACE_ID]: traceHeader, [REQUEST_ID]: requestId }, work);
}
