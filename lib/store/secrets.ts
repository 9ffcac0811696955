import { SecretsProvider } from "@aws-lambda-powertools/parameters/secrets";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { tracer } from "../tracing.js";

/**
 * Reads a Secrets Manager secret's string at run time, through Powertools Parameters: the value
 * is cached for `maxAgeSeconds`, so a warm function asks once per period and a rotated value is
 * used at most that long after it changed. The endpoint comes from the SDK's own variable
 * (AWS_ENDPOINT_URL_SECRETS_MANAGER), as for the other clients.
 */
export function secretReader(secretId: string, maxAgeSeconds: number): () => Promise<string> {
  const secrets = new SecretsProvider({
    awsSdkV3Client: tracer.captureAWSv3Client(
      new SecretsManagerClient({ maxAttempts: 5, retryMode: "standard" }),
    ),
  });
  return async () => {
    const value = await secrets.get(secretId, { maxAge: maxAgeSeconds });
    const text = typeof value === "string" ? value.trim() : "";
    if (!text) throw new Error(`The secret ${secretId} holds no text`);
    return text;
  };
}
