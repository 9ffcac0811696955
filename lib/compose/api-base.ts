import { type Config, capLimits, quotaLimits } from "../config.js";
import { apiGuards } from "../http/guards.js";
import { Caps } from "../limits/caps.js";
import { Quotas } from "../limits/quotas.js";
import { createStores } from "../store/clients.js";

/** What every API function shares: stores, auth and rate limit, quotas and workspace caps. */
export function apiBase(config: Config) {
  const stores = createStores(config);
  return {
    config,
    stores,
    guards: apiGuards(stores.table, config),
    quotas: new Quotas(stores.table, quotaLimits(config)),
    caps: new Caps(stores.table, capLimits(config)),
  };
}
