import { createHmac, randomBytes } from "node:crypto";

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is `whsec_` and the
 * base64 of 24 random bytes; a delivery is signed with HMAC-SHA256 of `{id}.{timestamp}.{body}`
 * under the decoded secret, sent as `webhook-signature: v1,{base64 digest}`.
 */
const SECRET_PREFIX = "whsec_";

export const newSecret = () => `${SECRET_PREFIX}${randomBytes(24).toString("base64")}`;

/** The `webhook-signature` header value of one delivery attempt. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  const digest = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
  return `v1,${digest}`;
}
