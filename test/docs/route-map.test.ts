import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { app } from "../../functions/docs-api.js";

/**
 * README's route map is one line per route, `- \`METHOD /path\` purpose`, under `## Routes`: it
 * must list exactly the operations `/openapi.json` publishes, each once, so a route added to the
 * API without its line, or a line left for a route that is gone, fails here.
 */
const README = resolve(import.meta.dirname, "../../README.md");
const METHODS = ["get", "put", "post", "patch", "delete"];
const ROUTE_LINE = /^- `(GET|POST|PUT|PATCH|DELETE) (\/\S*)` \S/;

/** The `## Routes` section of a README: its lines up to the next `## ` heading. */
function routeMapSection(markdown: string): string[] {
  const lines = markdown.split("\n");
  const start = lines.findIndex((line) => line.trim() === "## Routes");
  if (start < 0) throw new Error("README has no `## Routes` section");
  const end = lines.findIndex((line, i) => i > start && line.startsWith("## "));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** `METHOD /path` of every list item of the route map; an item that is not a route line throws. */
function routesOfMap(section: string[]): string[] {
  return section
    .filter((line) => line.startsWith("- "))
    .map((line) => {
      const match = ROUTE_LINE.exec(line);
      if (!match) throw new Error(`not a route line (- \`METHOD /path\` purpose): ${line}`);
      return `${match[1]} ${match[2]}`;
    });
}

async function published(): Promise<string[]> {
  const res = await app.request("/openapi.json");
  expect(res.status).toBe(200);
  const document = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations)
      .filter((method) => METHODS.includes(method))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

const difference = (a: string[], b: string[]) => a.filter((route) => !b.includes(route)).sort();
const repeated = (routes: string[]) => routes.filter((route, i) => routes.indexOf(route) !== i);

describe("README's route map", () => {
  const section = routeMapSection(readFileSync(README, "utf8"));

  it("lists every route /openapi.json publishes, once, and nothing else", async () => {
    const map = routesOfMap(section);
    const api = await published();
    expect(api.length).toBeGreaterThan(30);
    expect({
      missingFromMap: difference(api, map),
      notInOpenApi: difference(map, api),
      listedTwice: repeated(map),
    }).toEqual({ missingFromMap: [], notInOpenApi: [], listedTwice: [] });
  });

  it("links the full reference at /docs", () => {
    expect(section.join("\n")).toMatch(/\]\(http:\/\/127\.0\.0\.1:3000\/docs\)/);
  });
});

describe("reading a route map", () => {
  const map = [
    "Intro, with `GET /not-a-line` in prose.",
    "",
    "**Area**",
    "",
    "- `GET /api/things` list things",
    "- `DELETE /api/things/{id}` delete a thing",
  ];

  it("takes the method and path of each list item, and ignores prose", () => {
    expect(routesOfMap(map)).toEqual(["GET /api/things", "DELETE /api/things/{id}"]);
  });

  it("refuses a list item that is not a route line, rather than skipping it", () => {
    expect(() => routesOfMap([...map, "- GET /api/things/{id} without backticks"])).toThrow(
      /not a route line/,
    );
    expect(() => routesOfMap([...map, "- `GET /api/things/{id}`"])).toThrow(/not a route line/);
  });

  it("ends the section at the next second-level heading", () => {
    const markdown = ["# T", "## Routes", "- `GET /a` a", "## Next", "- `GET /b` b"].join("\n");
    expect(routesOfMap(routeMapSection(markdown))).toEqual(["GET /a"]);
  });
});
