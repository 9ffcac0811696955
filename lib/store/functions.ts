import type { LambdaClientConfig } from "@aws-sdk/client-lambda";

/**
 * Calling another of the service's functions synchronously (the render function). Its SDK client
 * is installed beside the bundles of the functions that call it and imported at the first call
 * (functions/manifest.ts), so their bundles and cold starts stay as they were.
 */

export type InvokerConfig = LambdaClientConfig;

/** Lambda's client, loaded on first use: `invoke` answers the function's payload and error. */
export async function invoker(config: InvokerConfig) {
  const { LambdaClient, InvokeCommand } = await import("@aws-sdk/client-lambda");
  const client = new LambdaClient(config);
  return {
    invoke: (FunctionName: string, Payload: Uint8Array) =>
      client.send(new InvokeCommand({ FunctionName, Payload })),
  };
}
