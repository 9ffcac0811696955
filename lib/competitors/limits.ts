import type { Config } from "../config.js";
import type { CheckLimits } from "./check.js";

/** The limits of a queued check, from the configuration (API checks use API_CHECK_LIMITS). */
export function limitsFrom(config: Config): CheckLimits {
  return {
    maxFetches: config.CHECK_MAX_FETCHES,
    budgetMs: config.CHECK_BUDGET_MS,
    politenessMs: config.CHECK_POLITENESS_MS,
    requestTimeoutMs: config.CHECK_REQUEST_TIMEOUT_MS,
  };
}
