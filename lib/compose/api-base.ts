import { type Config, quotaLimits } from "../config.js";
import { apiGuards } from "../http/guards.js";
import { Quotas } from "../limits/quotas.js";
import { createStores } from "../store/clients.js";

/** What every API function shares: stores, auth and rate limit, quotas. */
export function apiBase(config: Config) {
  const stores = createStores(config);
  return {
    config,
    stores,
    guards: apiGuards(stores.table, config),
    quotas: new Quotas(stores.table, quotaLimits(config)),
  };
}
