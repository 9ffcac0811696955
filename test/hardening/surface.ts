import { z } from "@hono/zod-openapi";
import { apiFunctions } from "../../functions/manifest.js";
import { openApiDocument } from "../../lib/http/docs.js";

/**
 * The API surface as the manifest defines it: every route of every API function, with the JSON
 * schemas of its path parameters, query and body taken from the OpenAPI document those same
 * route definitions generate, and the zod schema itself to tell a valid body from one that only
 * looks valid (refinements, such as "text or url, not both", have no JSON Schema). Routes added to the manifest are covered by every suite that reads
 * this list, without editing the suites.
 */

/** The subset of JSON Schema the route definitions produce. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  pattern?: string;
  format?: string;
  default?: unknown;
  example?: unknown;
  $ref?: string;
}

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface Param {
  name: string;
  schema: JsonSchema;
  required: boolean;
}

export interface PathParam extends Param {
  /** The id prefix the parameter's example shows (`kb_`, `crawl_`...), when it names an id. */
  idPrefix: string | undefined;
}

export interface ApiRoute {
  method: HttpMethod;
  /** The path template, e.g. `/api/knowledge/{id}`. */
  path: string;
  /** `METHOD /path`, for messages. */
  label: string;
  /** Served without a key (the API reference). */
  public: boolean;
  params: PathParam[];
  query: Param[];
  /** The `application/json` body schema, with every `$ref` resolved. */
  body: JsonSchema | undefined;
  /** Whether the route also takes `multipart/form-data`. */
  multipart: boolean;
  /** Whether the route's own zod schema accepts a JSON body (true for routes without one). */
  accepts(body: unknown): boolean;
}

interface Operation {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: JsonSchema }>;
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

/** Inlines `$ref`s to components (a reference met again inside itself stays a bare object). */
function resolve(
  schema: JsonSchema,
  components: Record<string, JsonSchema>,
  seen: string[] = [],
): JsonSchema {
  if (schema.$ref) {
    const name = schema.$ref.split("/").at(-1) ?? "";
    const target = components[name];
    if (!target || seen.includes(name)) return { type: "object" };
    return resolve(target, components, [...seen, name]);
  }
  const out: JsonSchema = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([k, v]) => [k, resolve(v, components, seen)]),
    );
  }
  if (schema.items) out.items = resolve(schema.items, components, seen);
  for (const key of ["anyOf", "oneOf", "allOf"] as const) {
    const branches = schema[key];
    if (branches) out[key] = branches.map((b) => resolve(b, components, seen));
  }
  return out;
}

const ID_EXAMPLE = /^([a-z]+_)[0-9A-Z]{26}$/;

function buildSurface(): ApiRoute[] {
  const routes = apiFunctions.flatMap((fn) => fn.routes);
  const doc = openApiDocument(routes) as unknown as {
    paths: Record<string, Record<string, Operation>>;
    components?: { schemas?: Record<string, JsonSchema> };
  };
  const components = doc.components?.schemas ?? {};
  return routes.map((route) => {
    const method = route.method.toUpperCase() as HttpMethod;
    const operation: Operation = doc.paths[route.path]?.[route.method] ?? {};
    const parameters = operation.parameters ?? [];
    const param = (p: (typeof parameters)[number]): Param => ({
      name: p.name,
      schema: resolve(p.schema ?? {}, components),
      required: p.required ?? false,
    });
    const content = operation.requestBody?.content ?? {};
    const json = content["application/json"]?.schema;
    const media = route.request?.body?.content["application/json"];
    const zodBody = media && "schema" in media ? media.schema : undefined;
    return {
      method,
      path: route.path,
      label: `${method} ${route.path}`,
      public: !route.path.startsWith("/api/"),
      params: parameters
        .filter((p) => p.in === "path")
        .map((p) => {
          const base = param(p);
          const example = typeof base.schema.example === "string" ? base.schema.example : "";
          return { ...base, idPrefix: ID_EXAMPLE.exec(example)?.[1] };
        }),
      query: parameters.filter((p) => p.in === "query").map(param),
      body: json ? resolve(json, components) : undefined,
      multipart: "multipart/form-data" in content,
      accepts: (body) => !(zodBody instanceof z.ZodType) || zodBody.safeParse(body).success,
    };
  });
}

/** Every route the manifest serves. */
export const surface: ApiRoute[] = buildSurface();

/** The routes that need a key: everything under /api. */
export const apiRoutes: ApiRoute[] = surface.filter((route) => !route.public);

/** The route's path with its parameters filled in (each value percent-encoded unless `raw`). */
export function fillPath(route: ApiRoute, values: Record<string, string>, raw = false): string {
  return route.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${route.label} needs a value for {${name}}`);
    return raw ? value : encodeURIComponent(value);
  });
}

/** The id prefixes the surface's path parameters use (`kb_`, `crawl_`, `comp_`...). */
export const idPrefixes = (): string[] => [
  ...new Set(apiRoutes.flatMap((r) => r.params.flatMap((p) => (p.idPrefix ? [p.idPrefix] : [])))),
];

/** A well-formed id of a kind that names nothing: an unknown id. */
export const unknownId = (prefix: string) => `${prefix}01J0000000000000000000ZZZZ`;

/**
 * The smallest value a schema accepts (enums' first member, minimum lengths, required properties
 * only), or `undefined` for a schema it cannot satisfy. Suites override fields that need meaning.
 */
export function minimalValid(schema: JsonSchema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum && schema.enum.length > 0) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  if (schema.example !== undefined) return schema.example;
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) {
    const branch = branches.find((b) => b.type !== "null") ?? branches[0];
    return branch ? minimalValid(branch) : undefined;
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "object": {
      const props = schema.properties ?? {};
      return Object.fromEntries(
        (schema.required ?? []).map((key) => [key, minimalValid(props[key] ?? {})]),
      );
    }
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => minimalValid(schema.items ?? {}));
    case "string":
      return "x".repeat(Math.max(1, schema.minLength ?? 1));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return true;
    default:
      return schema.properties ? minimalValid({ ...schema, type: "object" }) : "x";
  }
}
