import type { Config } from "../config.js";
import { WebhookEndpoints } from "../webhooks/endpoints.js";
import { apiBase } from "./api.js";

/** webhooks-api: endpoints, their delivery logs and test events; the stores alone. */
export function webhooksServices(config: Config) {
  const shared = apiBase(config);
  return { ...shared, endpoints: new WebhookEndpoints(shared.stores.table) };
}
