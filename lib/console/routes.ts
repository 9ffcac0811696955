import { createHash } from "node:crypto";
import type { Context } from "hono";
import { type AppEnv, createModule, type Module } from "../http/app.js";
import { contentSecurityPolicy, setPageHeaders } from "../http/page-headers.js";
import { CONSOLE_CSS, CONSOLE_JS } from "./assets.generated.js";

/**
 * Serves the console: its page at the API's root and its two assets, all public (the page asks
 * for a key and calls the API with it). Paths are relative, so it works under API Gateway's stage
 * path as on the local runtime.
 */

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>KB &amp; Intel console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="console/app.css">
<script type="module" src="console/app.js"></script>
</head>
<body>
<div id="app"><noscript>The console needs JavaScript.</noscript></div>
</body>
</html>
`;

interface Asset {
  body: string;
  type: string;
  etag: string;
}

const asset = (body: string, type: string): Asset => ({
  body,
  type,
  etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
});

export interface ConsoleOptions {
  /** Origins the page may send presigned uploads to: the bucket's (`bucketOrigin`), or the emulator's. */
  uploadOrigins?: string[];
}

export function consoleRoutes(options: ConsoleOptions = {}): Module {
  const connect = ["'self'", ...(options.uploadOrigins ?? [])];
  // No inline script or style anywhere, so a script injected into a page could not run, and the
  // key in sessionStorage could be sent nowhere but this API and the upload storage.
  const csp = contentSecurityPolicy({
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    // blob: for screenshots, fetched with the key and shown from memory.
    "img-src": ["'self'", "data:", "blob:"],
    "connect-src": connect,
  });
  const page = asset(PAGE, "text/html; charset=utf-8");
  const script = asset(CONSOLE_JS, "text/javascript; charset=utf-8");
  const style = asset(CONSOLE_CSS, "text/css; charset=utf-8");

  const serve = (c: Context<AppEnv>, { body, type, etag }: Asset) => {
    c.header("cache-control", "no-cache");
    c.header("etag", etag);
    setPageHeaders(c, type.startsWith("text/html") ? csp : undefined);
    if (c.req.header("if-none-match") === etag) return c.body(null, 304);
    c.header("content-type", type);
    return c.body(body);
  };

  const app = createModule();
  app.get("/", (c) => serve(c, page));
  app.get("/console/app.js", (c) => serve(c, script));
  app.get("/console/app.css", (c) => serve(c, style));
  return app;
}
