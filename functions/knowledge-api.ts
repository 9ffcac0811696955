import { handle } from "hono/aws-lambda";
import { knowledgeServices } from "../lib/compose/knowledge-api.js";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { invocation } from "../lib/invocation.js";
import { crawlRoutes } from "../lib/knowledge/crawl/routes.js";
import { sourcesRoutes } from "../lib/knowledge/sources/routes.js";
import { uploadsRoutes } from "../lib/knowledge/uploads/routes.js";

const services = knowledgeServices(loadConfig());
const allowPrivate = services.config.ALLOW_PRIVATE_URLS;

/** Knowledge sources, search, crawls and uploads: /api/knowledge/* */
export const app = createServiceApp({
  ...services.guards,
  modules: [
    // Before the sources: `/api/knowledge/crawl` is a crawl route, not a source id.
    crawlRoutes({
      crawls: services.crawls,
      sources: services.sources,
      allowPrivate,
      quotas: services.quotas,
    }),
    sourcesRoutes({
      sources: services.sources,
      blobs: services.stores.blobs,
      retriever: services.retriever,
      maxTextBytes: services.config.MAX_TEXT_BYTES,
      allowPrivate,
      quotas: services.quotas,
    }),
    uploadsRoutes({ uploads: services.uploads, quotas: services.quotas }),
  ],
});

export const handler = invocation(handle(app));
