import type { Config } from "../config.js";
import { Sources } from "../knowledge/sources/sources.js";
import { Uploads, uploadSettings } from "../knowledge/uploads/uploads.js";
import { createStores } from "../store/clients.js";
import { webhookEventsOf } from "./webhook-events.js";

/** upload-events-worker and watchdog: presigned uploads, as their objects arrive or never do. */
export function uploadServices(config: Config) {
  const stores = createStores(config);
  const events = webhookEventsOf(config, stores);
  const sources = new Sources(stores);
  const uploads = new Uploads({ ...stores, sources, events }, uploadSettings(config));
  return { stores, uploads, events };
}
