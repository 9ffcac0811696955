import type { MiddlewareHandler } from "hono";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import type { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { sourcesRoutes } from "../../lib/knowledge/sources/routes.js";
import type { Sources } from "../../lib/knowledge/sources/sources.js";
import { roomyQuotas, type TestAws } from "./aws.js";

/** Tenancy without the key store: the bearer token is the workspace id. */
export const bearerWorkspace: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("workspaceId", (c.req.header("authorization") ?? "").replace(/^Bearer /, ""));
  await next();
};

/** The knowledge API's source routes over the emulated stores, with quotas out of the way. */
export function sourcesApp(
  aws: TestAws,
  sources: Sources,
  retriever: IndexRetriever,
  { maxTextBytes = 100_000, allowPrivate = false } = {},
) {
  return createServiceApp({
    authenticate: bearerWorkspace,
    modules: [
      sourcesRoutes({
        sources,
        blobs: aws.blobs,
        retriever,
        maxTextBytes,
        quotas: roomyQuotas(aws.table),
        allowPrivate,
      }),
    ],
  });
}
