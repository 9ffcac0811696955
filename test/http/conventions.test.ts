import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { intelModules } from "../hardening/fixtures.js";
import { type Answer, send } from "../hardening/probe.js";
import { type Hardened, startHardened } from "../hardening/runtime.js";
import {
  type ApiRoute,
  fillPath,
  type JsonSchema,
  surface,
  unknownId,
} from "../hardening/surface.js";

/**
 * One convention on every route of `/openapi.json`, checked route by route so that a route added
 * without it fails here: an unknown query parameter or JSON body field is a 400 that names it
 * (a route without a body takes none), and every 400 about a parameter or a field names it in
 * `details.issues[].path`.
 */

interface Issue {
  path: string;
  message: string;
}

interface Operation {
  operationId: string;
}

let h: Hardened;
let documented: ApiRoute[];
let operationIds: string[];

beforeAll(async () => {
  h = await startHardened();
  const doc = (await (await fetch(`${h.rt.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, Operation>>;
  };
  documented = surface.filter((route) => doc.paths[route.path]?.[route.method.toLowerCase()]);
  operationIds = Object.values(doc.paths).flatMap((ops) =>
    Object.values(ops).map((op) => op.operationId),
  );
});
afterAll(() => h.close());

/** The route's path with a well-formed id that names nothing (`persona` for a module). */
function pathOf(route: ApiRoute): string {
  const values = Object.fromEntries(
    route.params.map((p) => [
      p.name,
      p.schema.enum ? String(p.schema.enum[0]) : unknownId(p.idPrefix ?? "x_"),
    ]),
  );
  return fillPath(route, values);
}

/** The branch of a route's body the path takes (the intel route: the module's own). */
function bodyBranch(route: ApiRoute): JsonSchema | undefined {
  const branches = route.body?.anyOf ?? route.body?.oneOf;
  if (!branches) return route.body;
  const intel = intelModules();
  const module = String(route.params.find((p) => p.name === "module")?.schema.enum?.[0] ?? "");
  return branches[Math.max(0, intel?.modules.indexOf(module) ?? 0)];
}

/** What a body must hold for its schema to be picked at all: its single-valued fields (`module`). */
function baseOf(branch: JsonSchema | undefined): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(branch?.properties ?? {}).flatMap(([name, schema]) =>
      schema.enum?.length === 1 ? [[name, schema.enum[0]]] : [],
    ),
  );
}

const typesOf = (schema: JsonSchema): Set<string> =>
  new Set([
    ...[schema.type ?? []].flat(),
    ...[...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].flatMap((b) => [...typesOf(b)]),
  ]);

/** A value of the wrong type for a field, or undefined for a field that takes anything. */
function wrongValueFor(schema: JsonSchema): unknown {
  const types = typesOf(schema);
  if (types.size === 0) return undefined;
  return types.has("object") ? "not an object" : { not: "valid" };
}

/** A value a query parameter refuses, or undefined for one that takes any text. */
function wrongParamFor(schema: JsonSchema): string | undefined {
  const value = schema.type === "array" && schema.items ? schema.items : schema;
  if (value.enum) return "not-a-value";
  if (value.type === "integer" || value.type === "number") return "not-a-number";
  if (value.maxLength !== undefined) return "x".repeat(value.maxLength + 1);
  return undefined;
}

function request(route: ApiRoute, query: string, json?: unknown): Promise<Answer> {
  return send(h.rt.url, {
    method: route.method,
    path: `${pathOf(route)}${query}`,
    key: route.public ? null : h.rt.key,
    ...(json === undefined
      ? {}
      : { body: JSON.stringify(json), headers: { "content-type": "application/json" } }),
  });
}

/** The answer's `details.issues`, after checking it is the project's 400. */
function issuesOf(answer: Answer, label: string): Issue[] {
  expect(answer.status, `${label}: ${answer.text.slice(0, 300)}`).toBe(400);
  const body = JSON.parse(answer.text) as {
    error: { code: string; message: string; details?: { issues?: Issue[] } };
  };
  expect(body.error.code, label).toBe("validation_failed");
  return body.error.details?.issues ?? [];
}

const fieldOf = (issue: Issue) => issue.path.split(".")[0];

describe("one convention on every route of /openapi.json", () => {
  it("covers every documented operation", () => {
    expect(documented).toHaveLength(operationIds.length);
  });

  it("refuses an unknown query parameter with a 400 naming it", async () => {
    const misses: string[] = [];
    for (const route of documented) {
      const answer = await request(route, "?unknownParameter=1&isActionedd=true");
      const issues = answer.status === 400 ? issuesOf(answer, route.label) : [];
      const named = issues.filter((i) => i.path === "unknownParameter" || i.path === "isActionedd");
      if (named.length !== 2 || !named.every((i) => i.message.includes(i.path))) {
        misses.push(`${route.label} -> ${answer.status} ${answer.text.slice(0, 200)}`);
      }
    }
    expect(misses).toEqual([]);
  });

  it("refuses an unknown JSON body field with a 400 naming it, a route without a body included", async () => {
    const misses: string[] = [];
    // A GET's body never reaches a route: Node's server and Lambda's adapter drop it.
    for (const route of documented.filter((r) => r.method !== "GET")) {
      const answer = await request(route, "", { ...baseOf(bodyBranch(route)), unknownField: 1 });
      const issues = answer.status === 400 ? issuesOf(answer, route.label) : [];
      if (!issues.some((i) => i.path === "unknownField" && i.message.includes("unknownField"))) {
        misses.push(`${route.label} -> ${answer.status} ${answer.text.slice(0, 200)}`);
      }
    }
    expect(misses).toEqual([]);
  });

  it("refuses an unknown form field of a file upload with a 400 naming it", async () => {
    const uploads = documented.filter((r) => r.multipart);
    expect(uploads.map((r) => r.label)).toEqual(["POST /api/knowledge"]);
    for (const route of uploads) {
      const form = new FormData();
      form.set("file", new File(["# Notes\nA file."], "notes.md"));
      form.set("colour", "red");
      const res = await h.rt.call(pathOf(route), { method: route.method, body: form });
      const answer = { status: res.status, headers: res.headers, text: await res.text() };
      expect(issuesOf(answer, route.label)).toEqual([
        { path: "colour", message: "Unknown form field `colour`" },
      ]);
      // What the service finds wrong with the file itself names the field too.
      const empty = new FormData();
      empty.set("file", new File([], "empty.md"));
      const refused = await h.rt.call(pathOf(route), { method: route.method, body: empty });
      const emptyAnswer = {
        status: refused.status,
        headers: refused.headers,
        text: await refused.text(),
      };
      expect(issuesOf(emptyAnswer, route.label)).toEqual([
        { path: "file", message: "The file is empty" },
      ]);
    }
  });

  it("takes no body where none is documented: an empty one or {} reaches the route", async () => {
    const bodiless = documented.filter((r) => !r.body && !r.multipart && r.method === "POST");
    expect(bodiless.map((r) => r.label)).toContain("POST /api/knowledge/{id}/reindex");
    for (const route of bodiless) {
      for (const json of [{}, undefined]) {
        const answer = await request(route, "", json);
        expect(answer.status, `${route.label} ${JSON.stringify(json)}: ${answer.text}`).not.toBe(
          400,
        );
      }
      const notAnObject = await request(route, "", [1]);
      expect(issuesOf(notAnObject, route.label)).toEqual([
        { path: "", message: "This route takes no body" },
      ]);
    }
  });

  it("names the parameter of every 400 about a query parameter's value", async () => {
    const checked: string[] = [];
    const misses: string[] = [];
    for (const route of documented) {
      for (const param of route.query) {
        const value = wrongParamFor(param.schema);
        if (value === undefined) continue;
        const label = `${route.label} ?${param.name}=${value.slice(0, 20)}`;
        const answer = await request(route, `?${param.name}=${encodeURIComponent(value)}`);
        const issues = answer.status === 400 ? issuesOf(answer, label) : [];
        checked.push(`${route.label} ${param.name}`);
        if (!issues.some((i) => fieldOf(i) === param.name)) {
          misses.push(`${label} -> ${answer.status} ${answer.text.slice(0, 200)}`);
        }
      }
    }
    expect(misses).toEqual([]);
    expect(checked).toEqual(
      expect.arrayContaining([
        "GET /api/intel/events severity",
        "GET /api/intel/events isActioned",
        "GET /api/artifacts module",
        "GET /api/knowledge/crawl/{crawlId}/pages status",
        "GET /api/webhooks limit",
      ]),
    );
  });

  it("names the field of every 400 about a JSON body field's value", async () => {
    const checked: string[] = [];
    const misses: string[] = [];
    for (const route of documented) {
      const branch = bodyBranch(route);
      for (const [name, schema] of Object.entries(branch?.properties ?? {})) {
        const value = wrongValueFor(schema);
        if (value === undefined || schema.enum?.length === 1) continue;
        const label = `${route.label} {${name}: ${JSON.stringify(value)}}`;
        const answer = await request(route, "", { ...baseOf(branch), [name]: value });
        const issues = answer.status === 400 ? issuesOf(answer, label) : [];
        checked.push(`${route.label} ${name}`);
        if (!issues.some((i) => fieldOf(i) === name)) {
          misses.push(`${label} -> ${answer.status} ${answer.text.slice(0, 200)}`);
        }
      }
    }
    expect(misses).toEqual([]);
    expect(checked).toEqual(
      expect.arrayContaining([
        "POST /api/knowledge/search crawl_id",
        "PATCH /api/knowledge/{id} enabled",
        "POST /api/knowledge/crawl seedUrl",
        "POST /api/artifacts output",
        "POST /api/intel/{module} segment",
      ]),
    );
  });
});
