import type { IncomingMessage } from "node:http";
import type { MiddlewareHandler } from "hono";
import type { CorsOrigins } from "../../lib/config.js";
import type { ErrorBody } from "../../lib/errors.js";
import { type AppEnv, createServiceApp, pathMatcher, type ServiceApp } from "../../lib/http/app.js";
import { corsHeaders } from "../../lib/http/cors.js";
import { withFunctionContext } from "../../lib/log.js";
import { lambdaContext } from "./lambda-context.js";

/** API Gateway's own limit on a request's payload (10 MB), which it applies before any function. */
const API_GATEWAY_PAYLOAD_LIMIT = 10 * 1024 * 1024;

const noAuth: MiddlewareHandler<AppEnv> = async (_c, next) => next();

/** What @hono/node-server passes beside the web Request: the Node.js request it came from. */
interface NodeBindings {
  /** `complete` once the whole request, body included, has been received. */
  incoming?: Pick<IncomingMessage, "complete">;
}

/** The same answer with `Connection: close`, so the server reads no more of the request. */
function closing(response: Response): Response {
  const headers = new Headers(response.headers);
  headers.set("connection", "close");
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

function tooLarge(limit: number, headers: Record<string, string>): Response {
  const body: ErrorBody = {
    error: {
      code: "payload_too_large",
      message: `Request bodies are limited to ${limit} bytes`,
      details: { limit },
    },
  };
  return closing(Response.json(body, { status: 413, headers }));
}

/** An API function of the manifest: its name, its app, and its memory (1024 MB unless given). */
export interface FunctionApp {
  name: string;
  app: ServiceApp;
  memoryMb?: number | undefined;
}

export interface GatewayOptions {
  /** API Gateway's payload limit, lower in tests. */
  maxBodyBytes?: number;
  /** `CORS_ORIGINS`, for the answers the gateway gives itself (its 413 and 404). */
  corsOrigins?: CorsOrigins;
}

/**
 * Routes each request to the function app that owns its path, as API Gateway does on AWS (the
 * most specific route wins: `/api/intel/competitors` over `/api/intel/{module}`); paths no
 * function owns get the service's 404 body.
 *
 * Bodies are read only by the function that wants them, after its key check, and never past a
 * limit: a declared length over API Gateway's limit is a 413 before anything is routed; each
 * route's own limit (lib/http/app.ts) refuses a larger declared length without reading and cuts a
 * streamed body as it arrives; and a body the function did not read to its end (refused, or cut)
 * closes the connection after the answer instead of being read off the wire.
 *
 * Each request to a named function runs as one invocation of it, as Lambda would: what it logs
 * carries that function's name and a request id of its own (`withFunctionContext`, lib/log.ts).
 */
export function localGateway(
  apps: Array<FunctionApp | ServiceApp>,
  { maxBodyBytes = API_GATEWAY_PAYLOAD_LIMIT, corsOrigins = [] }: GatewayOptions = {},
) {
  const owners = apps.map((fn) => {
    const owner: Partial<FunctionApp> & { app: ServiceApp } = "fetch" in fn ? { app: fn } : fn;
    return { ...owner, match: pathMatcher(owner.app) };
  });
  // Owns no route, so it only ever answers 404; there is nothing behind it to authenticate for.
  const fallback = createServiceApp({ authenticate: noAuth, corsOrigins, modules: [] });
  return {
    async fetch(request: Request, env?: NodeBindings): Promise<Response> {
      if (Number(request.headers.get("content-length") ?? 0) > maxBodyBytes) {
        return tooLarge(maxBodyBytes, corsHeaders(corsOrigins, request.headers.get("origin")));
      }
      const path = new URL(request.url).pathname;
      let owner: Partial<FunctionApp> & { app: ServiceApp } = { app: fallback };
      let best = -1;
      for (const candidate of owners) {
        const { specificity } = candidate.match(path);
        if (specificity > best) {
          best = specificity;
          owner = candidate;
        }
      }
      const { app, name, memoryMb } = owner;
      const response = await (name
        ? withFunctionContext(lambdaContext(name, undefined, memoryMb), () =>
            app.fetch(request, env),
          )
        : app.fetch(request, env));
      return env?.incoming && !env.incoming.complete ? closing(response) : response;
    },
  };
}
