import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { htmlPage, respond, type Site, startSite } from "../support/sites.js";

/**
 * The API as a browser uses it, against the local runtime.
 *
 * CORS as a browser enforces it: a page served from another origin calls the local runtime with
 * its key, starts a presigned upload, posts the file to the S3 emulator and waits for the source
 * to be indexed. Every step reads the answer, which the browser allows only with CORS headers.
 */

/** The page's script: what a browser app does to upload a file. */
const script = (api: string, key: string) => `
window.outcome = (async () => {
  const api = ${JSON.stringify(api)};
  const auth = { authorization: "Bearer ${key}" };
  const steps = {};
  const refused = await fetch(api + "/api/knowledge", { headers: { authorization: "Bearer nope" } });
  steps.refused = { status: refused.status, code: (await refused.json()).error.code };
  const file = new Blob(["# Browser notes\\n\\nUploaded from a page on another origin."], {
    type: "text/markdown",
  });
  const created = await fetch(api + "/api/knowledge/uploads", {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ filename: "notes.md", contentType: "text/markdown", bytes: file.size }),
  });
  const upload = await created.json();
  steps.created = { status: created.status, requestId: created.headers.get("x-request-id") };
  const form = new FormData();
  for (const [name, value] of Object.entries(upload.fields)) form.append(name, value);
  form.append("file", file, "notes.md");
  const posted = await fetch(upload.uploadUrl, { method: upload.method, body: form });
  steps.posted = { status: posted.status };
  for (let i = 0; i < 400; i++) {
    const source = await (await fetch(api + "/api/knowledge/" + upload.id, { headers: auth })).json();
    steps.source = { status: source.status, chunks: source.chunk_count, error: source.last_error };
    if (source.status !== "awaiting_upload" && source.status !== "indexing") break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return steps;
})().catch((err) => ({ failed: String(err) }));
`;

let runtime: TestRuntime;
let page: Site;
let browser: Browser;

beforeAll(async () => {
  [runtime, browser] = await Promise.all([startTestRuntime(), launchBrowser()]);
  page = await startSite();
  page.route("/", respond(htmlPage("App", '<h1>App</h1><script src="/app.js"></script>')));
  page.route(
    "/app.js",
    respond(script(runtime.url, runtime.key), { "content-type": "text/javascript" }),
  );
});

afterAll(async () => {
  await Promise.all([browser?.close(), page?.close(), runtime?.close()]);
});

describe("a page on another origin", () => {
  it("uploads a file through the API and the presigned URL, and sees it indexed", async () => {
    expect(new URL(page.origin).origin).not.toBe(new URL(runtime.url).origin);
    const tab = await browser.newPage();
    await tab.goto(page.origin);
    const outcome = await tab.evaluate(
      () => (window as unknown as { outcome: Promise<unknown> }).outcome,
    );
    expect(outcome).toEqual({
      refused: { status: 401, code: "unauthorized" },
      created: { status: 200, requestId: expect.any(String) },
      posted: { status: 204 },
      source: { status: "indexed", chunks: 1, error: null },
    });
  }, 60_000);
});

describe("the API reference at /docs", () => {
  it("renders the operations with nothing but the service reachable, within its content security policy", async () => {
    const context = await browser.newContext();
    const elsewhere: string[] = [];
    const service = new URL(runtime.url).origin;
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (new URL(url).origin === service) return route.continue();
      elsewhere.push(url);
      return route.abort("internetdisconnected");
    });
    const tab = await context.newPage();
    // What the page's policy blocked. The viewer's schema validator probes `Function("")` once
    // and does without when refused: that `eval` report is expected, and nothing else.
    await tab.addInitScript(() => {
      const blocked: string[] = [];
      (window as unknown as { blocked: string[] }).blocked = blocked;
      document.addEventListener("securitypolicyviolation", (e) => {
        if (e.blockedURI !== "eval") blocked.push(`${e.effectiveDirective} ${e.blockedURI}`);
      });
    });
    const res = await tab.goto(`${runtime.url}/docs`);
    expect(res?.headers()["content-security-policy"]).toContain("script-src 'self';");
    // The document's title and its first group's operation, as the viewer renders them.
    await tab
      .getByText("Is the API answering (no key needed)")
      .first()
      .waitFor({ timeout: 30_000 });
    await tab.getByText("Knowledge Base and Marketing Intel API").first().waitFor();
    expect(await tab.getByText("/api/knowledge/uploads").count()).toBeGreaterThan(0);
    expect(await tab.getByText("Ask AI").count()).toBe(0);
    expect(elsewhere).toEqual([]);
    // "Try it": the request goes to the API, which the policy allows.
    await tab.getByText("Is the API answering (no key needed)").first().click();
    await tab
      .getByRole("button", { name: /Test Request/ })
      .first()
      .click();
    await tab.getByRole("button", { name: /Send/ }).first().click();
    await tab.getByText("200 OK").first().waitFor();
    expect(await tab.evaluate(() => (window as unknown as { blocked: string[] }).blocked)).toEqual(
      [],
    );
    await context.close();
  }, 60_000);
});
