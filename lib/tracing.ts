import { Tracer } from "@aws-lambda-powertools/tracer";

/**
 * X-Ray tracing through Powertools Tracer: on only inside Lambda with active tracing, a no-op
 * elsewhere (locally, in tests). The AWS SDK clients are captured where they are created
 * (lib/store), model calls get a subsegment each (`traced`). Outbound HTTP in general is not
 * captured: a crawl's hundreds of page requests would flood the trace.
 */
export const tracer = new Tracer({ serviceName: "kb-intel", captureHTTPsRequests: false });

/** Runs `work` in a subsegment named `name` (annotated), closed with its error if it throws. */
export async function traced<T>(
  name: string,
  annotations: Record<string, string | number | boolean>,
  work: () => Promise<T>,
): Promise<T> {
  if (!tracer.isTracingEnabled()) return work();
  return tracer.provider.captureAsyncFunc(name, async (subsegment) => {
    for (const [key, value] of Object.entries(annotations)) {
      subsegment?.addAnnotation(key, value);
    }
    try {
      return await work();
    } catch (err) {
      subsegment?.addError(err as Error);
      throw err;
    } finally {
      subsegment?.close();
    }
  }) as Promise<T>;
}
