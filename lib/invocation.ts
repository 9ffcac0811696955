import { logger, withLogKeys } from "./log.js";
import { metrics } from "./metrics.js";

/** Lambda's context object (aws-lambda's `Context`, named here without importing Lambda types). */
type LambdaContext = Exclude<Parameters<typeof logger.addContext>[0], { coldStart: boolean }>;

/**
 * A Lambda handler as Powertools expects it: every line logged carries the invocation's context
 * (`cold_start`, `function_name`, `function_request_id`...) and, until a request or a message
 * names its own, its request id as correlation id; the invocation's metrics are flushed when it
 * ends, however it ends.
 */
export function invocation<E, R>(
  handler: (event: E, context: LambdaContext) => Promise<R>,
): (event: E, context: LambdaContext) => Promise<R> {
  return async (event, context) => {
    logger.addContext(context);
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
