import { describe, expect, it } from "vitest";
import { documentedRoutes } from "../../functions/docs-api.js";
import { apiFunctions } from "../../functions/manifest.js";

describe("the API reference", () => {
  it("documents every /api route that API Gateway routes", () => {
    const key = (r: { method: string; path: string }) => `${r.method.toUpperCase()} ${r.path}`;
    const documented = new Set(documentedRoutes.map(key));
    const served = apiFunctions
      .flatMap((fn) => fn.routes)
      .filter((r) => r.path.startsWith("/api/"));
    expect(served.map(key).filter((route) => !documented.has(route))).toEqual([]);
    expect(documented.size).toBe(served.length);
  });
});
