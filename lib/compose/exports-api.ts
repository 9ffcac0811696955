import type { Config } from "../config.js";
import { ExportJobs } from "../workspaces/export/exports.js";
import { apiBase } from "./api-base.js";

/** exports-api: starts workspace exports and answers their progress and download links. */
export function exportsServices(config: Config) {
  const shared = apiBase(config);
  const queue = shared.stores.exportsQueue;
  if (!queue) throw new Error("Invalid configuration: EXPORTS_QUEUE_URL is not set");
  return { ...shared, jobs: new ExportJobs(shared.stores.table), queue };
}
