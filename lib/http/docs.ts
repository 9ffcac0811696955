import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv, Module } from "./app.js";
import { API_VERSION } from "./health.js";
import { contentSecurityPolicy, setPageHeaders } from "./page-headers.js";

/** The OpenAPI 3.1 document, built from the same route definitions that validate requests. */
export function openApiDocument(routes: RouteConfig[]) {
  const app = new OpenAPIHono();
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
    type: "http",
    scheme: "bearer",
    description: "An API key from `npm run keys -- create`",
  });
  for (const route of routes) {
    app.openAPIRegistry.registerPath(
      route.path.startsWith("/api/") ? { ...route, security: [{ apiKey: [] }] } : route,
    );
  }
  return app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Knowledge Base and Marketing Intel API",
      version: API_VERSION,
      description:
        'Errors always have the body `{"error":{"code","message","details?"}}`. Lists are paged with `limit` and the opaque `cursor` from `nextCursor`.',
    },
  });
}

/**
 * Where the API is mounted as the caller reached it: on AWS the stage (`/v1`), or a custom
 * domain's base path, is the part of the request's full path before the route's own path;
 * locally the root. Relative, so it resolves against the host the document was fetched from.
 */
function serverUrl(c: Context<AppEnv>): string {
  const full = c.env?.event?.requestContext?.path ?? "";
  const base = full.endsWith(c.req.path) ? full.slice(0, full.length - c.req.path.length) : "";
  return base || "/";
}

/**
 * Scalar's prebuilt viewer, served by the docs function itself (no CDN, works offline). Bundled,
 * it is the file `VIEWER_FILE` beside the function's bundle (infra/aws/bundle.ts puts it there);
 * from the TypeScript sources, it is read from node_modules.
 */
export const VIEWER_FILE = "api-reference.js";

/** The viewer's file in node_modules. */
export function viewerSource(base = import.meta.url): string {
  const packageMain = createRequire(base).resolve("@scalar/api-reference");
  return join(dirname(packageMain), "browser", "standalone.js");
}

interface Viewer {
  script: string;
  /** Changes with the script, so that it can be cached for good under a URL that names it. */
  version: string;
}

async function loadViewer(base = import.meta.url): Promise<Viewer> {
  const fromSource = base.endsWith(".ts");
  const script = await readFile(
    fromSource ? viewerSource(base) : new URL(VIEWER_FILE, base),
    "utf8",
  );
  return { script, version: createHash("sha256").update(script).digest("hex").slice(0, 16) };
}

/**
 * Nothing from elsewhere: the page's own fonts, "try it" straight to the API (no proxy), and none
 * of the viewer's hosted features (AI agent, MCP, developer tools, telemetry).
 */
const VIEWER_CONFIGURATION = JSON.stringify({
  withDefaultFonts: false,
  telemetry: false,
  proxyUrl: "",
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
});

const page = (viewer: Viewer) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"></head>
<body>
<script id="api-reference" data-url="openapi.json" data-configuration='${VIEWER_CONFIGURATION}'></script>
<script src="docs/${VIEWER_FILE}?v=${viewer.version}"></script>
</body>
</html>`;

const YEAR_SECONDS = 365 * 24 * 3600;

/**
 * The reference page's content security policy, sent with the console's page headers
 * (lib/http/page-headers.ts): scripts only from the function itself (the page's inline
 * `<script>` is empty, a holder of data attributes, so it needs no allowance), "try it" only to
 * this API. The viewer sets styles from script (`<style>`
 * elements and `style` attributes), which no hash can allow: inline styles are, inline scripts
 * never. Its schema validator probes `Function("")` once and works without it when refused
 * (one `script-src` report in the console, nothing broken).
 */
export const DOCS_CSP = contentSecurityPolicy({
  "script-src": ["'self'"],
  "style-src": ["'self'", "'unsafe-inline'"],
  "img-src": ["'self'", "data:"],
  "connect-src": ["'self'"],
});

/**
 * Serves `/openapi.json` (with the server the caller reached), the interactive reference at
 * `/docs` and its viewer script; no key needed.
 */
export function docsModule(routes: RouteConfig[]): Module {
  const app = new OpenAPIHono<AppEnv>();
  let document: ReturnType<typeof openApiDocument> | undefined;
  let viewer: Promise<Viewer> | undefined;
  const theViewer = () => {
    viewer ??= loadViewer().catch((err: unknown) => {
      viewer = undefined;
      throw err;
    });
    return viewer;
  };
  app.get("/openapi.json", (c) => {
    document ??= openApiDocument(routes);
    return c.json({ ...document, servers: [{ url: serverUrl(c) }] });
  });
  app.get("/docs", async (c) => {
    setPageHeaders(c, DOCS_CSP);
    return c.html(page(await theViewer()));
  });
  app.get(`/docs/${VIEWER_FILE}`, async (c) => {
    const { script, version } = await theViewer();
    setPageHeaders(c);
    const cache =
      c.req.query("v") === version ? `public, max-age=${YEAR_SECONDS}, immutable` : "no-cache";
    return c.body(script, 200, {
      "Content-Type": "text/javascript; charset=utf-8",
      "Cache-Control": cache,
    });
  });
  return app;
}
