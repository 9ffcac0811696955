import { randomUUID } from "node:crypto";
import { OpenAPIHono, type z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import type { CorsOrigins } from "../config.js";
import { DomainError, invalid } from "../errors.js";
import { logger, withLogKeys } from "../log.js";
import { redactError } from "../redact.js";
import { cors } from "./cors.js";
import { domainErrorResponse, errorResponse } from "./errors.js";

export interface AppEnv {
  Variables: {
    requestId: string;
    workspaceId: string;
    /** What an idempotent replay answers instead of this answer (`keepForReplay`). */
    replayBody?: string;
  };
  /**
   * Set by hono/aws-lambda on AWS (`path` is the full path, stage included); empty or
   * node-server bindings locally.
   */
  Bindings: { event?: { requestContext?: { requestId?: string; path?: string } } };
}

/** Largest JSON request body accepted. */
export const DEFAULT_BODY_LIMIT = 2 * 1024 * 1024;
/** Largest multipart body: a 4 MiB file (what fits a Lambda payload once base64-encoded) and its framing. */
export const MULTIPART_BODY_LIMIT = 4 * 1024 * 1024 + 64 * 1024;

const jsonLimit = bodyLimit({ maxSize: DEFAULT_BODY_LIMIT });
const multipartLimit = bodyLimit({
  maxSize: MULTIPART_BODY_LIMIT,
  onError: () => {
    throw new DomainError("payload_too_large", "Files over 4 MB go through a presigned upload", {
      details: { limit: MULTIPART_BODY_LIMIT, presignedUpload: "POST /api/knowledge/uploads" },
    });
  },
});

/** Bodies are bounded before anything reads them; file uploads get room for a file. */
const bodyLimits: MiddlewareHandler<AppEnv> = (c, next) =>
  /^multipart\/form-data/i.test(c.req.header("content-type") ?? "")
    ? multipartLimit(c, next)
    : jsonLimit(c, next);

export interface ValidationIssue {
  /** The field or parameter, dotted (`crawl_id.0`); empty for the request as a whole. */
  path: string;
  message: string;
}

/** What an unknown key is, by where the request has it. */
const UNKNOWN: Record<string, string> = {
  query: "Unknown query parameter",
  json: "Unknown field",
  form: "Unknown form field",
};

/** Zod's issues as the 400's `details.issues`: one per unknown key, named by its path. */
export function validationIssues(error: z.ZodError, target: string): ValidationIssue[] {
  return error.issues.flatMap((issue) =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((key) => ({
          path: [...issue.path, key].join("."),
          message: `${UNKNOWN[target] ?? "Unknown key"} \`${key}\``,
        }))
      : [{ path: issue.path.join("."), message: issue.message }],
  );
}

/** The 400's message: what is wrong, field by field (the first few). */
function summary(issues: ValidationIssue[]): string {
  const shown = issues
    .slice(0, 3)
    .map((i) => (i.path && !i.message.includes(`\`${i.path}\``) ? `${i.path}: ` : "") + i.message);
  const more = issues.length > 3 ? `; and ${issues.length - 3} more` : "";
  return `The request is not valid: ${shown.join("; ")}${more}`;
}

/** A sub-app holding one concern's routes; validation failures become the project's 400 body. */
export function createModule() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const issues = validationIssues(result.error, result.target);
        throw invalid(summary(issues), { issues });
      }
    },
  });
}

export type Module = ReturnType<typeof createModule>;

/** Hono's own errors (bad JSON, body over the limit) as the project's domain errors. */
function toDomainError(err: Error): DomainError | undefined {
  if (err instanceof DomainError) return err;
  if (err instanceof HTTPException) {
    if (err.status === 400) return new DomainError("invalid_json", "The body is not valid JSON");
    if (err.status === 413)
      return new DomainError("payload_too_large", "The request body is too large");
    if (err.status === 401) return new DomainError("unauthorized", "A valid API key is required");
    if (err.status === 415) {
      return new DomainError(
        "unsupported_media_type",
        "This route does not accept that media type",
      );
    }
  }
  return undefined;
}

export interface PathMatch {
  /** Methods the app's routes accept at the path (empty when no route has that path). */
  methods: Set<string>;
  /** Literal segments of the most specific matching route: `/a/b` beats `/a/{id}`. */
  specificity: number;
}

/** Matches paths against an app's routes, as API Gateway does: literal segments win over parameters. */
export function pathMatcher(app: OpenAPIHono<AppEnv>): (path: string) => PathMatch {
  let table: Array<{ pattern: RegExp; method: string; literals: number }> | undefined;
  return (path) => {
    table ??= app.routes
      .filter((route) => route.method !== "ALL")
      .map((route) => ({
        method: route.method,
        literals: route.path.split("/").filter((part) => part && !part.startsWith(":")).length,
        pattern: new RegExp(
          `^${route.path
            .replace(/[.+?^$()|[\]\\]/g, "\\$&")
            .replace(/:[A-Za-z0-9_]+(\{[^}]*\})?/g, "[^/]+")
            .replace(/\*/g, ".*")}$`,
        ),
      }));
    const matches = table.filter((r) => r.pattern.test(path));
    return {
      methods: new Set(matches.map((r) => r.method)),
      specificity: Math.max(-1, ...matches.map((r) => r.literals)),
    };
  };
}

const ACCEPTED_MEDIA_TYPES = /^(application\/json|multipart\/form-data)\s*(;|$)/i;

/** A request body in any media type the API does not read is a 415, not a confusing 400. */
const acceptedMediaTypes: MiddlewareHandler<AppEnv> = async (c, next) => {
  const hasBody =
    Number(c.req.header("content-length") ?? 0) > 0 ||
    c.req.header("transfer-encoding") !== undefined;
  const type = c.req.header("content-type") ?? "";
  if (hasBody && !ACCEPTED_MEDIA_TYPES.test(type)) {
    throw new DomainError(
      "unsupported_media_type",
      `Send the body as application/json${type ? `, not ${type.split(";")[0]}` : ""}`,
    );
  }
  await next();
};

/** The routes of modules that take no body, as `METHOD path` patterns beside those that do. */
function routesByBody(modules: Module[]) {
  return modules
    .flatMap((module) => module.openAPIRegistry.definitions)
    .flatMap((definition) => (definition.type === "route" ? [definition.route] : []))
    .map((route) => ({
      method: route.method.toUpperCase(),
      path: new RegExp(`^${route.path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
      takesBody: route.request?.body !== undefined,
    }));
}

/**
 * A JSON body sent to a route that takes none is refused as an unknown field is elsewhere: each
 * of its fields is a 400 naming it (an empty body or `{}` is fine). Only where every route the
 * path could be takes no body.
 */
function refuseBodyFields(modules: Module[]): MiddlewareHandler<AppEnv> {
  let routes: ReturnType<typeof routesByBody> | undefined;
  return async (c, next) => {
    const hasBody =
      Number(c.req.header("content-length") ?? 0) > 0 ||
      c.req.header("transfer-encoding") !== undefined;
    if (!hasBody || !/^application\/json/i.test(c.req.header("content-type") ?? "")) {
      return next();
    }
    routes ??= routesByBody(modules);
    const matching = routes.filter((r) => r.method === c.req.method && r.path.test(c.req.path));
    if (matching.length === 0 || matching.some((r) => r.takesBody)) return next();
    const text = await c.req.text();
    if (text.trim() === "") return next();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new DomainError("invalid_json", "The body is not valid JSON");
    }
    const fields =
      body !== null && typeof body === "object" && !Array.isArray(body) ? Object.keys(body) : null;
    if (fields?.length === 0) return next();
    const issues: ValidationIssue[] = fields
      ? fields.map((key) => ({
          path: key,
          message: `${UNKNOWN.json} \`${key}\`: this route takes no body`,
        }))
      : [{ path: "", message: "This route takes no body" }];
    throw invalid(summary(issues), { issues });
  };
}

export interface ServiceOptions {
  /** Guards every `/api/*` route. */
  authenticate: MiddlewareHandler<AppEnv>;
  /** Runs after authentication on every `/api/*` route: the per-workspace request limit. */
  rateLimit?: MiddlewareHandler<AppEnv>;
  /** Origins whose pages may read the answers (`CORS_ORIGINS`); none when absent. */
  corsOrigins?: CorsOrigins;
  /** Runs on every `/api/*` route after the body checks, given the modules: idempotent creates. */
  idempotency?: (modules: Module[]) => MiddlewareHandler<AppEnv>;
  modules: Module[];
}

/**
 * The root app of a Lambda function, or of the local server with every module mounted:
 * request ids, one structured log line per request, auth on /api, and one error body everywhere.
 */
export function createServiceApp({
  authenticate,
  rateLimit,
  corsOrigins = [],
  idempotency,
  modules,
}: ServiceOptions) {
  const app = new OpenAPIHono<AppEnv>();

  app.use("*", (c, next) => {
    const requestId = c.env?.event?.requestContext?.requestId ?? randomUUID();
    c.set("requestId", requestId);
    // Everything the request logs, and every message it queues, carries its id (lib/log.ts).
    return withLogKeys({ correlation_id: requestId }, async () => {
      const started = performance.now();
      await next();
      c.header("x-request-id", requestId);
      logger.info("request", {
        requestId,
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        durationMs: Math.round(performance.now() - started),
        workspaceId: c.get("workspaceId"),
      });
    });
  });
  app.use("*", cors(corsOrigins));
  app.use("/api/*", authenticate);
  if (rateLimit) app.use("/api/*", rateLimit);
  app.use("/api/*", bodyLimits);
  app.use("/api/*", acceptedMediaTypes);
  app.use("/api/*", refuseBodyFields(modules));
  if (idempotency) app.use("/api/*", idempotency(modules));
  for (const module of modules) app.route("/", module);

  const match = pathMatcher(app);
  app.notFound((c) => {
    const allowed = match(c.req.path).methods;
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(", ");
      return errorResponse(
        c,
        {
          code: "method_not_allowed",
          message: `${c.req.method} is not allowed here; use ${allow}`,
        },
        { Allow: allow },
      );
    }
    return errorResponse(c, {
      code: "not_found",
      message: `No route ${c.req.method} ${c.req.path}`,
    });
  });

  app.onError((err, c) => {
    const known = toDomainError(err);
    if (known) return domainErrorResponse(c, known);
    const requestId = c.get("requestId");
    logger.error("unhandled error", { requestId, error: redactError(err) });
    return errorResponse(c, {
      code: "internal_error",
      message: "Something went wrong on our side; quote the request id when reporting it",
      requestId,
    });
  });

  return app;
}

export type ServiceApp = ReturnType<typeof createServiceApp>;
