import type { Config } from "../config.js";
import { SafeFetcher } from "../web/fetch.js";

/** The one way a function fetches public pages: private addresses refused unless configured. */
export const fetcherOf = (config: Config) =>
  new SafeFetcher({ allowPrivate: config.ALLOW_PRIVATE_URLS });
