import type { Config } from "../config.js";
import { Sources } from "../knowledge/sources/sources.js";
import { Uploads, uploadSettings } from "../knowledge/uploads/uploads.js";
import { createStores } from "../store/clients.js";

/** upload-events-worker and watchdog: presigned uploads, as their objects arrive or never do. */
export function uploadServices(config: Config) {
  const stores = createStores(config);
  const uploads = new Uploads({ ...stores, sources: new Sources(stores) }, uploadSettings(config));
  return { stores, uploads };
}
