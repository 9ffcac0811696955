import { handle } from "hono/aws-lambda";
import { createServiceApp } from "../lib/http/app.js";
import { denyAll } from "../lib/http/auth.js";
import { docsModule } from "../lib/http/docs.js";
import { knowledgeRoutes } from "../lib/knowledge/routes.js";

/** The API reference: /openapi.json and /docs, public. It touches no store, so it needs no configuration. */
export const app = createServiceApp({
  authenticate: denyAll,
  modules: [docsModule([...knowledgeRoutes])],
});

export const handler = handle(app);
