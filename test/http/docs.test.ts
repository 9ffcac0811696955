import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { app, documentedRoutes } from "../../functions/docs-api.js";
import { apiFunctions } from "../../functions/manifest.js";
import { bundleFunction } from "../../infra/aws/bundle.js";
import { VIEWER_FILE, viewerSource } from "../../lib/http/docs.js";
import { API_VERSION } from "../../lib/http/health.js";

type Document = {
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, { operationId?: string; security?: unknown[] }>>;
};

const documentAt = async (env?: object) =>
  (await (await app.request("/openapi.json", {}, env)).json()) as Document;

const out = await mkdtemp(join(tmpdir(), "docs-bundle-"));
afterAll(() => rm(out, { recursive: true, force: true }));

describe("the API reference", () => {
  it("documents every /api route that API Gateway routes, and /health", async () => {
    const key = (r: { method: string; path: string }) => `${r.method.toUpperCase()} ${r.path}`;
    const documented = new Set(documentedRoutes.map(key));
    const served = apiFunctions
      .flatMap((fn) => fn.routes)
      .filter((r) => r.path.startsWith("/api/") || r.path === "/health");
    expect(served.map(key).filter((route) => !documented.has(route))).toEqual([]);
    expect(documented.size).toBe(served.length);
  });

  it("names every operation once, in camelCase", async () => {
    const operations = Object.entries((await documentAt()).paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({
        at: `${method} ${path}`,
        id: op.operationId,
      })),
    );
    expect(operations.length).toBe(documentedRoutes.length);
    expect(operations.filter((op) => !/^[a-z][a-zA-Z]+$/.test(op.id ?? ""))).toEqual([]);
    const ids = operations.map((op) => op.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("gives the server the caller reached: the root locally, the stage on AWS", async () => {
    expect((await documentAt()).servers).toEqual([{ url: "/" }]);
    const viaStage = { event: { requestContext: { path: "/v1/openapi.json" } } };
    expect((await documentAt(viaStage)).servers).toEqual([{ url: "/v1" }]);
    const viaDomain = { event: { requestContext: { path: "/openapi.json" } } };
    expect((await documentAt(viaDomain)).servers).toEqual([{ url: "/" }]);
  });
});

describe("GET /health", () => {
  it("answers without a key, uncached, and is documented as public", async () => {
    const res = await app.request("/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ status: "ok", version: API_VERSION });
    const health = (await documentAt()).paths["/health"]?.get;
    expect(health?.operationId).toBe("getHealth");
    expect(health?.security).toEqual([]);
  });
});

describe("the viewer", () => {
  const viewer = readFileSync(viewerSource(), "utf8");

  it("is served by the function, cached for good under the URL the page names", async () => {
    const page = await (await app.request("/docs")).text();
    const src = /<script src="(docs\/[^"]+)"/.exec(page)?.[1];
    expect(src).toMatch(new RegExp(`^docs/${VIEWER_FILE}\\?v=[0-9a-f]{16}$`));
    expect(page).not.toMatch(/https?:\/\//);
    const res = await app.request(`/${src}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(res.headers.get("cache-control")).toContain("immutable");
    expect(await res.text()).toBe(viewer);
    const unversioned = await app.request(`/docs/${VIEWER_FILE}`);
    expect(unversioned.headers.get("cache-control")).toBe("no-cache");
  });

  it("ships beside the bundled docs function, which serves it from there", async () => {
    const fn = apiFunctions.find(({ name }) => name === "docs-api");
    if (!fn) throw new Error("The manifest has no docs-api");
    const { dir, bytes } = await bundleFunction(fn, out, false);
    expect(existsSync(join(dir, VIEWER_FILE))).toBe(true);
    // The viewer is a file beside the bundle, not inside it.
    expect(bytes).toBeLessThan(viewer.length / 4);
    const bundled = (await import(pathToFileURL(join(dir, "index.mjs")).href)) as {
      app: typeof app;
    };
    const res = await bundled.app.request(`/docs/${VIEWER_FILE}`);
    expect(res.status).toBe(200);
    expect((await res.text()).length).toBe(viewer.length);
  }, 120_000);
});
