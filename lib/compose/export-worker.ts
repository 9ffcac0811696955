import { KeyStore } from "../auth/keys.js";
import { type Config, quotaLimits } from "../config.js";
import { BrandProfiles } from "../intel/brand/profiles.js";
import { Quotas } from "../limits/quotas.js";
import { createStores } from "../store/clients.js";
import { WebhookEndpoints } from "../webhooks/endpoints.js";
import type { BundleWriterDeps } from "../workspaces/export/bundle-writer.js";
import { EXPORT_WORKER_TIMEOUT_SECONDS, ExportJobs } from "../workspaces/export/exports.js";

/** export-worker: writes export bundles, reading every kind of record of a workspace. */
export function exportWorkerServices(config: Config): BundleWriterDeps {
  const { table, blobs, exportsQueue } = createStores(config);
  if (!exportsQueue) throw new Error("Invalid configuration: EXPORTS_QUEUE_URL is not set");
  return {
    jobs: new ExportJobs(table),
    blobs,
    queue: exportsQueue,
    bundle: {
      table,
      blobs,
      keys: new KeyStore(table, 0),
      brands: new BrandProfiles(table),
      endpoints: new WebhookEndpoints(table),
      quotas: new Quotas(table, quotaLimits(config)),
    },
    settings: {
      partBytes: config.EXPORT_PART_BYTES,
      sliceMs: config.EXPORT_SLICE_SECONDS * 1000,
      leaseMs: EXPORT_WORKER_TIMEOUT_SECONDS * 1000,
    },
  };
}
