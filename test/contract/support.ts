import { z } from "zod";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

/**
 * What a client written from the interface document (/work/shared/INTERFACE.md) needs: a base
 * URL, an API key sent as `Authorization: Bearer <key>` on every request, JSON bodies, and, where
 * the document says "not shown", the service's own description of itself at `/openapi.json`.
 * Nothing here reaches into the service's code: only HTTP.
 */

type Json = { [key: string]: unknown };

export interface Answer<T = Json> {
  status: number;
  /** The JSON body, or the text of a body that is not JSON (undefined when empty). */
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  /** Sent as a JSON body. */
  json?: unknown;
  /** Sent as a multipart/form-data body. */
  form?: FormData;
  /** The key to send: the client's own by default; null for no Authorization header at all. */
  key?: string | null;
}

export class Client {
  constructor(
    readonly baseUrl: string,
    readonly key: string,
  ) {}

  async send<T = Json>(
    method: string,
    path: string,
    { json, form, key = this.key }: RequestOptions = {},
  ): Promise<Answer<T>> {
    const headers = new Headers();
    if (key !== null) headers.set("authorization", `Bearer ${key}`);
    let body: string | FormData | undefined;
    if (json !== undefined) {
      headers.set("content-type", "application/json");
      body = JSON.stringify(json);
    } else if (form) {
      body = form;
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body: body ?? null });
    const text = await res.text();
    const isJson = /json/i.test(res.headers.get("content-type") ?? "");
    return {
      status: res.status,
      body: (text === "" ? undefined : isJson ? JSON.parse(text) : text) as T,
      headers: res.headers,
    };
  }

  get = <T = Json>(path: string, options?: RequestOptions) => this.send<T>("GET", path, options);
  post = <T = Json>(path: string, json?: unknown, options?: RequestOptions) =>
    this.send<T>("POST", path, { ...options, ...(json === undefined ? {} : { json }) });
  put = <T = Json>(path: string, json: unknown) => this.send<T>("PUT", path, { json });
  patch = <T = Json>(path: string, json: unknown) => this.send<T>("PATCH", path, { json });
  delete = <T = Json>(path: string) => this.send<T>("DELETE", path);
}

interface Parameter {
  name: string;
  in: string;
  schema: Json;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Json }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Json }> }>;
  security?: Array<Record<string, string[]>>;
  description?: string;
}

/** The service's description of itself, `/openapi.json`, read as a client would. */
export class OpenApi {
  private readonly defs: Json;

  constructor(readonly doc: Json) {
    // JSON Schema `$defs` stand in for OpenAPI's components, so that references resolve.
    const components = (doc.components as Json | undefined)?.schemas ?? {};
    this.defs = rewriteRefs(components) as Json;
  }

  operation(method: string, path: string): Operation {
    const paths = this.doc.paths as Record<string, Record<string, Operation>>;
    const operation = paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`/openapi.json documents no ${method} ${path}`);
    return operation;
  }

  /** The status codes the operation documents. */
  statuses(method: string, path: string): number[] {
    return Object.keys(this.operation(method, path).responses).map(Number);
  }

  /** A documented response, which the test fails without. */
  response(method: string, path: string, status: number) {
    const response = this.operation(method, path).responses[String(status)];
    if (!response) {
      throw new Error(`/openapi.json documents no ${status} for ${method} ${path}`);
    }
    return response;
  }

  /** The documented JSON schema of a response, as a validator. */
  responseSchema(method: string, path: string, status: number): z.ZodType {
    const schema = this.response(method, path, status).content?.["application/json"]?.schema;
    if (!schema) throw new Error(`/openapi.json documents no JSON body for ${status} of ${path}`);
    return this.validator(schema);
  }

  parameter(method: string, path: string, name: string): Parameter {
    const parameter = this.operation(method, path).parameters?.find((p) => p.name === name);
    if (!parameter) throw new Error(`/openapi.json documents no parameter ${name} of ${path}`);
    return parameter;
  }

  /** A named schema of the components. */
  schema(name: string): Json {
    const schema = this.defs[name];
    if (!schema) throw new Error(`/openapi.json has no schema ${name}`);
    return schema as Json;
  }

  validator(schema: Json): z.ZodType {
    const withDefs = { ...(rewriteRefs(schema) as Json), $defs: this.defs };
    return z.fromJSONSchema(withDefs as Parameters<typeof z.fromJSONSchema>[0]);
  }

  /** The security scheme an operation requires (its first). */
  securityScheme(method: string, path: string): Json | undefined {
    const operation = this.operation(method, path);
    const name = Object.keys(operation.security?.[0] ?? {})[0];
    const schemes = (this.doc.components as Json | undefined)?.securitySchemes as
      | Record<string, Json>
      | undefined;
    return name ? schemes?.[name] : undefined;
  }
}

function rewriteRefs(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"#/$defs/'));
}

/**
 * Asserts a body against a documented schema, naming what does not fit: returns the problems
 * (empty when it fits), so that a test can `expect(...).toEqual([])` and show them on failure.
 */
export function misfits(schema: z.ZodType, body: unknown): string[] {
  const parsed = schema.safeParse(body);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join(".") || "(body)"}: ${issue.message}`);
}

/** An ISO 8601 UTC timestamp such as 2025-03-01T10:00:00.000Z. */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export const isIsoUtc = (value: unknown): boolean =>
  typeof value === "string" && ISO_UTC.test(value) && !Number.isNaN(Date.parse(value));

/** Longest any single wait may take: a guard against a hang, not a measure of speed. */
export const HANG_GUARD_MS = 90_000;
/** Per-test timeout for tests that wait on background work. */
export const SLOW_TEST_MS = 4 * HANG_GUARD_MS;

/**
 * Asks `probe` again until `done` holds of its answer, and returns that answer. The only time
 * limit is the hang guard: how fast the service is never decides the outcome.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  hangGuardMs = HANG_GUARD_MS,
): Promise<T> {
  const deadline = Date.now() + hangGuardMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await probe();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Gave up waiting for ${what}; last seen: ${JSON.stringify(last)}`);
}

export interface Service {
  runtime: TestRuntime;
  client: Client;
  openapi: OpenApi;
  close(): Promise<void>;
}

/**
 * The whole service, in this process, as its operator would start it for local tests: fixture
 * sites live on 127.0.0.1, so `ALLOW_PRIVATE_URLS` is on; the polls of these tests must not run
 * into the per-minute rate limit. `env` adds settings (a model, check pacing).
 */
export async function startService(env: Record<string, string> = {}): Promise<Service> {
  Object.assign(process.env, {
    ALLOW_PRIVATE_URLS: "true",
    RATE_LIMIT_PER_MINUTE: "1000000",
    ...env,
  });
  const runtime = await startTestRuntime();
  const client = new Client(runtime.url, runtime.key);
  const described = await client.get("/openapi.json");
  if (described.status !== 200) throw new Error(`/openapi.json answered ${described.status}`);
  return { runtime, client, openapi: new OpenApi(described.body), close: () => runtime.close() };
}

/** The Error body's `details.issues`, as /openapi.json says a 400 carries them. */
export const issuesOf = (body: Json): Array<{ path?: unknown[]; message?: string }> =>
  ((body.error as Json | undefined)?.details as Json | undefined)?.issues as Array<{
    path?: unknown[];
    message?: string;
  }>;
