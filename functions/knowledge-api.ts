import { handle } from "hono/aws-lambda";
import { loadConfig } from "../lib/config.js";
import { createServiceApp } from "../lib/http/app.js";
import { knowledgeApi } from "../lib/knowledge/api.js";
import { createServices } from "../lib/services.js";

const services = createServices(loadConfig());

/** Knowledge sources and search: /api/knowledge/* */
export const app = createServiceApp({
  authenticate: services.authenticate,
  modules: [
    knowledgeApi({
      sources: services.sources,
      retriever: services.retriever,
      maxTextBytes: services.config.MAX_TEXT_BYTES,
    }),
  ],
});

export const handler = handle(app);
