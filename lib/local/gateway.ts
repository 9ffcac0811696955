import type { MiddlewareHandler } from "hono";
import { type AppEnv, createServiceApp, pathMatcher, type ServiceApp } from "../http/app.js";

/** Bodies a refused request may still be sending are read off up to this size, so the client sees the answer. */
const DRAIN_LIMIT = 16 * 1024 * 1024;

async function drain(request: Request): Promise<void> {
  if (!request.body || request.bodyUsed) return;
  let read = 0;
  try {
    for await (const part of request.body) {
      read += part.byteLength;
      if (read > DRAIN_LIMIT) break;
    }
  } catch {
    // The client went away; nothing to drain.
  }
}

const noAuth: MiddlewareHandler<AppEnv> = async (_c, next) => next();

/**
 * Routes each request to the function app that owns its path, as API Gateway does on AWS (the
 * most specific route wins: `/api/intel/competitors` over `/api/intel/{module}`); paths no
 * function owns get the service's 404 body.
 */
export function localGateway(apps: ServiceApp[]) {
  const owners = apps.map((app) => ({ app, match: pathMatcher(app) }));
  // Owns no route, so it only ever answers 404; there is nothing behind it to authenticate for.
  const fallback = createServiceApp({ authenticate: noAuth, modules: [] });
  return {
    async fetch(request: Request, env?: object): Promise<Response> {
      const path = new URL(request.url).pathname;
      let owner = fallback;
      let best = -1;
      for (const candidate of owners) {
        const { specificity } = candidate.match(path);
        if (specificity > best) {
          best = specificity;
          owner = candidate.app;
        }
      }
      const response = await owner.fetch(request, env);
      await drain(request);
      return response;
    },
  };
}
