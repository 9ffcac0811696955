import type { Config } from "../config.js";
import { createDataKeys } from "../store/clients.js";
import { EndpointCircuits } from "../webhooks/circuit.js";
import { WebhookEndpoints } from "../webhooks/endpoints.js";
import { apiBase } from "./api-base.js";

/** webhooks-api: endpoints, their delivery logs and test events; the stores and the KMS key. */
export function webhooksServices(config: Config) {
  const shared = apiBase(config);
  // Seals each new endpoint's secret under the KMS key (GenerateDataKey; it never decrypts).
  return {
    ...shared,
    endpoints: new WebhookEndpoints(shared.stores.table, createDataKeys(config)),
    circuits: new EndpointCircuits(shared.stores.table),
  };
}
