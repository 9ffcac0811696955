import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { apiFunctions, queueWorkers, scheduledFunctions } from "../../functions/manifest.js";

/**
 * The layering rules of DESIGN.md, read from the import statements themselves: no import circles
 * anywhere, `lib/` imports nothing above it, and only `lib/store/` speaks the AWS SDK.
 */
const root = resolve(import.meta.dirname, "../..");

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter(
      (entry) => entry.isFile() && /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith(".d.ts"),
    )
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

const IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/gm;
const DYNAMIC = /import\(\s*["']([^"']+)["']\s*\)/g;

/** Every import of a file: relative ones resolved to repository paths, packages as written. */
function importsOf(file: string): { local: string[]; packages: string[] } {
  const text = readFileSync(join(root, file), "utf8");
  const specifiers = [...text.matchAll(IMPORT), ...text.matchAll(DYNAMIC)].map(
    (m) => m[1] as string,
  );
  const local: string[] = [];
  const packages: string[] = [];
  for (const spec of specifiers) {
    if (spec.startsWith(".")) {
      local.push(relative(root, resolve(root, dirname(file), spec)).replace(/\.js$/, ".ts"));
    } else packages.push(spec);
  }
  return { local, packages };
}

const files = [...sourceFiles("lib"), ...sourceFiles("functions"), ...sourceFiles("infra")];
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe("the import graph", () => {
  it("has no circles", () => {
    const circles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const walk = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        circles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const next of graph.get(file)?.local ?? []) {
        if (graph.has(next)) walk(next, [...path, file]);
      }
      state.set(file, "done");
    };
    for (const file of graph.keys()) walk(file, []);
    expect(circles).toEqual([]);
  });

  it("keeps lib/ below functions/ and infra/", () => {
    const upward = [...graph]
      .filter(([file]) => file.startsWith("lib/"))
      .flatMap(([file, { local }]) =>
        local.filter((to) => !to.startsWith("lib/")).map((to) => `${file} -> ${to}`),
      );
    expect(upward).toEqual([]);
  });

  it("lets only lib/store speak the AWS SDK", () => {
    const sdk = [...graph]
      .filter(([file]) => file.startsWith("lib/") && !file.startsWith("lib/store/"))
      .flatMap(([file, { packages }]) =>
        packages.filter((p) => p.startsWith("@aws-sdk/")).map((p) => `${file} -> ${p}`),
      );
    expect(sdk).toEqual([]);
  });

  it("keeps Lambda event types out of the domain", () => {
    const lambda = [...graph]
      .filter(([file]) => file.startsWith("lib/") && !file.startsWith("lib/http/"))
      .flatMap(([file]) =>
        /from\s+["']aws-lambda["']/.test(readFileSync(join(root, file), "utf8")) ? [file] : [],
      );
    expect(lambda).toEqual([]);
  });

  it("deploys every function file: each is an entry of the manifest, and each entry a file", () => {
    const entries = [...apiFunctions, ...queueWorkers, ...scheduledFunctions].map((f) => f.entry);
    const handlers = sourceFiles("functions").filter((file) => file !== "functions/manifest.ts");
    expect(handlers.sort()).toEqual([...entries].sort());
  });
});
