import type { MiddlewareHandler } from "hono";
import { type AppEnv, createServiceApp, methodsForPath, type ServiceApp } from "../http/app.js";

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
 * Routes each request to the function app that owns its path, as API Gateway does on AWS;
 * paths no function owns get the service's 404 body.
 */
export function localGateway(apps: ServiceApp[]) {
  const owners = apps.map((app) => ({ app, methods: methodsForPath(app) }));
  // Owns no route, so it only ever answers 404; there is nothing behind it to authenticate for.
  const fallback = createServiceApp({ authenticate: noAuth, modules: [] });
  return {
    async fetch(request: Request, env?: object): Promise<Response> {
      const path = new URL(request.url).pathname;
      const owner = owners.find((o) => o.methods(path).size > 0)?.app ?? fallback;
      const response = await owner.fetch(request, env);
      await drain(request);
      return response;
    },
  };
}
