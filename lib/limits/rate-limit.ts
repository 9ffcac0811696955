import type { MiddlewareHandler } from "hono";
import { DomainError } from "../errors.js";
import type { AppEnv } from "../http/app.js";
import { type Table, wsKey } from "../store/table.js";

const WINDOW_SECONDS = 60;

/**
 * Per-workspace request limit, shared by every function instance: a counter per workspace and
 * minute in the table, bumped with one conditional write per request. Past the limit the request
 * is a 429 with `Retry-After` (the seconds left in the minute). A fixed window allows up to twice
 * the limit across a minute boundary; API Gateway's throttling bounds bursts before that.
 */
export function rateLimit(table: Table, perMinute: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const now = Math.floor(Date.now() / 1000);
    const window = now - (now % WINDOW_SECONDS);
    const count = await table.increment(wsKey(c.get("workspaceId")), `RATE#${window}`, "count", 1, {
      max: perMinute,
      expiresAt: window + 2 * WINDOW_SECONDS,
    });
    if (count === undefined) {
      throw new DomainError(
        "rate_limited",
        `Too many requests: this workspace may make ${perMinute} per minute`,
        {
          details: { limit: perMinute, windowSeconds: WINDOW_SECONDS },
          retryAfterSeconds: window + WINDOW_SECONDS - now,
        },
      );
    }
    c.header("RateLimit-Limit", String(perMinute));
    c.header("RateLimit-Remaining", String(perMinute - count));
    await next();
  };
}
