import { type Config, capLimits } from "../config.js";
import { Sources } from "../knowledge/sources/sources.js";
import { Uploads, uploadSettings } from "../knowledge/uploads/uploads.js";
import { Caps } from "../limits/caps.js";
import { createStores } from "../store/clients.js";
import { webhookEventsOf } from "./webhook-events.js";

/** upload-events-worker and watchdog: presigned uploads, as their objects arrive or never do. */
export function uploadServices(config: Config) {
  const stores = createStores(config);
  const events = webhookEventsOf(config, stores);
  const caps = new Caps(stores.table, capLimits(config));
  const sources = new Sources({ ...stores, caps });
  const uploads = new Uploads({ ...stores, sources, events, caps }, uploadSettings(config));
  return { stores, uploads, events };
}
