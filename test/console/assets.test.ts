import { readFile } from "node:fs/promises";
import { S3Client } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { app } from "../../functions/console-web.js";
import { CONSOLE_CSS, CONSOLE_JS } from "../../lib/console/assets.generated.js";
import { ASSETS_MODULE, assetsModule, buildConsole } from "../../lib/console/build.js";
import { consoleRoutes } from "../../lib/console/routes.js";
import { Blobs } from "../../lib/store/blobs.js";
import { bucketOrigin } from "../../lib/store/bucket-origin.js";
import { presignPost } from "../../lib/store/presigned-post.js";

/** What the console function serves, and that it serves the current build of lib/console/app. */

/** The shipped console, script and stylesheet together, stays small (no framework, no CDN). */
const BUDGET_BYTES = 64 * 1024;

describe("the console's assets", () => {
  it("are the current build of lib/console/app (run `npm run console:build` after a change)", async () => {
    const built = assetsModule(await buildConsole());
    expect(built === (await readFile(ASSETS_MODULE, "utf8"))).toBe(true);
  });

  it(`stay under ${BUDGET_BYTES / 1024} KB`, () => {
    expect(CONSOLE_JS.length + CONSOLE_CSS.length).toBeLessThan(BUDGET_BYTES);
  });

  it("bundle lib/console/app alone: the API's types come from its contracts as types only", async () => {
    const { inputs } = await buildConsole();
    expect(inputs.length).toBeGreaterThan(10);
    expect(inputs.filter((file) => !file.startsWith("lib/console/app/"))).toEqual([]);
  });
});

describe("the console function", () => {
  it("serves the page under a policy that allows no inline code and only the API and uploads", async () => {
    const res = await consoleRoutes({ uploadOrigins: ["http://127.0.0.1:4569"] }).request("/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self' http://127.0.0.1:4569;");
    expect(csp).not.toContain("*.amazonaws.com");
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const html = await res.text();
    // Relative paths: the page works under API Gateway's stage path as at the local root.
    expect(html).toContain('src="console/app.js"');
    expect(html).toContain('href="console/app.css"');
  });

  it("names the bucket's own host as the one place uploads may go on AWS", async () => {
    const origin = bucketOrigin("kb-intel-bucket83908e77-abc", "eu-west-1");
    expect(origin).toBe("https://kb-intel-bucket83908e77-abc.s3.eu-west-1.amazonaws.com");
    expect(bucketOrigin("with.dots", "us-east-1")).toBe("https://s3.us-east-1.amazonaws.com");
    // The origin the SDK's own presigned POST goes to, whatever its region.
    const s3 = new S3Client({
      region: "eu-west-1",
      credentials: { accessKeyId: "a", secretAccessKey: "b" },
    });
    const { url } = await presignPost(new Blobs(s3, "kb-intel-bucket83908e77-abc"), "k", {
      bytes: 1,
      contentType: "text/plain",
      expiresInSeconds: 60,
    });
    expect(new URL(url).origin).toBe(origin);
    const res = await consoleRoutes({ uploadOrigins: [origin] }).request("/");
    expect(res.headers.get("content-security-policy")).toContain(`connect-src 'self' ${origin};`);
  });

  it("serves its assets with their type, and 304 to a browser that has them", async () => {
    const js = await app.request("/console/app.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(await js.text()).toBe(CONSOLE_JS);
    const css = await app.request("/console/app.css");
    expect(await css.text()).toBe(CONSOLE_CSS);
    const etag = js.headers.get("etag") ?? "";
    expect(etag).not.toBe(css.headers.get("etag"));
    const again = await app.request("/console/app.js", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
  });

  it("keeps the API's answers for everything else", async () => {
    const res = await app.request("/api/knowledge");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
  });
});
