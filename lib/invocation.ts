import { logger, scopedFunction, withLogKeys } from "./log.js";
import { metrics } from "./metrics.js";

/** Lambda's context object (aws-lambda's `Context`, named here without importing Lambda types). */
type LambdaContext = Exclude<Parameters<typeof logger.addContext>[0], { coldStart: boolean }>;

/**
 * A Lambda handler as Powertools expects it: every line logged carries the invocation's context
 * (`cold_start`, `function_name`, `function_request_id`...) and, until a request or a message
 * names its own, its request id as correlation id; the invocation's metrics are flushed when it
 * ends, however it ends. On AWS, where a process runs one function, Powertools holds the context
 * (`addContext`); the local runtime, which runs them all in one process, has scoped it to the
 * invocation already (`withFunctionContext` in lib/log.ts), and the shared logger is left alone.
 */
export function invocation<E, R>(
  handler: (event: E, context: LambdaContext) => Promise<R>,
): (event: E, context: LambdaContext) => Promise<R> {
  return async (event, context) => {
    if (scopedFunction() === undefined) logger.addContext(context);
    try {
      return await withLogKeys({ correlation_id: context.awsRequestId }, () =>
        handler(event, context),
      );
    } finally {
      // Publishing nothing would log a warning in every invocation that counted nothing.
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    }
  };
}
