import type { MiddlewareHandler } from "hono";
import type { KeyStore } from "../auth/keys.js";
import { DomainError } from "../errors.js";
import type { AppEnv } from "./app.js";

const unauthorized = () =>
  new DomainError("unauthorized", "A valid API key is required: Authorization: Bearer <key>");

/**
 * Resolves the workspace from `Authorization: Bearer <key>`. Missing, malformed, unknown and
 * revoked keys all get the same 401; keys anywhere else (query string, other headers) are ignored.
 */
export function bearerAuth(keys: KeyStore): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Stryker disable next-line StringLiteral: any text that is not a bearer header is refused alike
    const header = c.req.header("authorization") ?? "";
    // Stryker disable next-line MethodExpression: header values reach here trimmed (Fetch Headers)
    const match = /^Bearer ([^\s]+)$/i.exec(header.trim());
    const workspaceId = match?.[1] ? await keys.verify(match[1]) : null;
    if (!workspaceId) throw unauthorized();
    c.set("workspaceId", workspaceId);
    await next();
  };
}

/** For functions that serve no /api route: anything under /api is refused like a bad key. */
export const denyAll: MiddlewareHandler<AppEnv> = async () => {
  throw unauthorized();
};
