import { api } from "./api.js";

/**
 * The API's own OpenAPI document, read once: forms, filters and optional features come from it,
 * so a field or a route the API gains shows up in the console without a change here.
 */

export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  $ref?: string;
  description?: string;
  example?: unknown;
  examples?: unknown[];
  default?: unknown;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  format?: string;
}

export interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
  description?: string;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

export class Spec {
  private constructor(private readonly doc: Document) {}

  static async load(): Promise<Spec> {
    return new Spec(await api<Document>("GET", "openapi.json"));
  }

  /** A schema with its `$ref` followed (one level; nested refs resolve as they are read). */
  resolve(schema: Schema | undefined): Schema {
    if (!schema?.$ref) return schema ?? {};
    const name = schema.$ref.split("/").at(-1) ?? "";
    return this.resolve(this.doc.components?.schemas?.[name]);
  }

  schema(name: string): Schema | undefined {
    const found = this.doc.components?.schemas?.[name];
    return found ? this.resolve(found) : undefined;
  }

  has(method: string, path: string): boolean {
    return Boolean(this.doc.paths[path]?.[method.toLowerCase()]);
  }

  /** Query parameters of an operation, without paging (`limit`, `cursor`). */
  filters(method: string, path: string): Parameter[] {
    return (this.doc.paths[path]?.[method.toLowerCase()]?.parameters ?? []).filter(
      (p) => p.in === "query" && p.name !== "limit" && p.name !== "cursor",
    );
  }

  pathEnum(method: string, path: string, name: string): string[] {
    const parameter = this.doc.paths[path]?.[method.toLowerCase()]?.parameters?.find(
      (p) => p.in === "path" && p.name === name,
    );
    return (this.resolve(parameter?.schema).enum ?? []).map(String);
  }

  /**
   * The branch of an operation's `anyOf` body named after `variant` (`persona` picks
   * `PersonaRequest` or `PersonaInput`), or the schema of that name when the body has none.
   */
  bodyVariant(method: string, path: string, variant: string): Schema | undefined {
    const named = new RegExp(`^${variant}(Request|Input)$`, "i");
    const ref = this.body(method, path).anyOf?.find((s) =>
      named.test(s.$ref?.split("/").at(-1) ?? ""),
    );
    if (ref) return this.resolve(ref);
    const name = `${variant.charAt(0).toUpperCase()}${variant.slice(1)}Input`;
    return this.schema(name);
  }

  /** The JSON body schema of an operation. */
  body(method: string, path: string): Schema {
    return this.resolve(
      this.doc.paths[path]?.[method.toLowerCase()]?.requestBody?.content?.["application/json"]
        ?.schema,
    );
  }
}
