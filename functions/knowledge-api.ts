import { handle } from "hono/aws-lambda";
import { knowledgeServices } from "../lib/compose/knowledge-api.js";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { invocation } from "../lib/invocation.js";
import { crawlApi } from "../lib/knowledge/crawl/api.js";
import { knowledgeApi } from "../lib/knowledge/sources/api.js";
import { uploadsApi } from "../lib/knowledge/uploads/api.js";

const services = knowledgeServices(loadConfig());
const allowPrivate = services.config.ALLOW_PRIVATE_URLS;

/** Knowledge sources, search, crawls and uploads: /api/knowledge/* */
export const app = createServiceApp({
  ...services.guards,
  modules: [
    // Before the sources: `/api/knowledge/crawl` is a crawl route, not a source id.
    crawlApi({
      crawls: services.crawls,
      sources: services.sources,
      allowPrivate,
      quotas: services.quotas,
    }),
    knowledgeApi({
      sources: services.sources,
      blobs: services.stores.blobs,
      retriever: services.retriever,
      maxTextBytes: services.config.MAX_TEXT_BYTES,
      allowPrivate,
      quotas: services.quotas,
    }),
    uploadsApi({ uploads: services.uploads, quotas: services.quotas }),
  ],
});

export const handler = invocation(handle(app));
