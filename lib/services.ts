import { KeyStore } from "./auth/keys.js";
import type { Config } from "./config.js";
import { bearerAuth } from "./http/auth.js";
import { LexicalRetriever } from "./knowledge/retrieval.js";
import { Sources } from "./knowledge/sources.js";
import { createStores } from "./store/clients.js";

/** Everything a function needs, built once per process from its configuration. */
export function createServices(config: Config) {
  const stores = createStores(config);
  const keys = new KeyStore(stores.table, config.KEY_CACHE_SECONDS);
  return {
    config,
    stores,
    keys,
    authenticate: bearerAuth(keys),
    sources: new Sources(stores),
    retriever: new LexicalRetriever(stores),
  };
}

export type Services = ReturnType<typeof createServices>;
