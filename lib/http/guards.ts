import { KeyStore } from "../auth/keys.js";
import type { Config } from "../config.js";
import { rateLimit } from "../limits/rate-limit.js";
import type { Table } from "../store/table.js";
import type { Module } from "./app.js";
import { bearerAuth } from "./auth.js";
import { IdempotencyKeys, idempotentCreates } from "./idempotency.js";

/**
 * What stands before the routes of a function: CORS (which pages may read the answers, preflights
 * without a key), then on every `/api/*` route the API key, the workspace's rate limit, and on
 * the create routes the `Idempotency-Key`.
 */
export function apiGuards(table: Table, config: Config) {
  const idempotencyKeys = new IdempotencyKeys(table);
  return {
    idempotency: (modules: Module[]) => idempotentCreates(idempotencyKeys, modules),
    corsOrigins: config.CORS_ORIGINS,
    authenticate: bearerAuth(new KeyStore(table, config.KEY_CACHE_SECONDS)),
    rateLimit: rateLimit(table, config.RATE_LIMIT_PER_MINUTE),
  };
}
