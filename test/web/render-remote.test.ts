import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rendererOf } from "../../lib/compose/renderer.js";
import type { Config } from "../../lib/config.js";
import { FetchError } from "../../lib/web/errors.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { BrowserRenderer } from "../../lib/web/render/browser.js";
import { answerRender, LambdaRenderer, type RenderPayload } from "../../lib/web/render/remote.js";
import { CHROMIUM } from "../support/browser.js";
import { htmlPage, respond, type Site, startSite } from "../support/sites.js";

/**
 * Rendering in the render function, as the functions on AWS reach it: Lambda's own SDK client
 * invokes an endpoint on 127.0.0.1 that speaks Lambda's Invoke API and runs the render
 * function's work (`answerRender`) over the real browser. The page, its screenshot and a
 * failure's code come back as the browser in the caller's own process would give them.
 */

const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 5_000 });
const FUNCTION = "kb-intel-test-render";

const APP = `fetch("/api/roles").then((r) => r.json()).then((roles) => {
  document.getElementById("root").innerHTML = "<h1>Careers</h1><ul>" +
    roles.map((r) => "<li class='job'>" + r + "</li>").join("") + "</ul>";
});`;

describe("the render function behind Lambda's Invoke", () => {
  let site: Site;
  let browser: BrowserRenderer;
  let lambda: Server;
  let endpoint: string;
  const invoked: string[] = [];
  /** What the endpoint answers instead of running the render (a crashed or timed-out function). */
  let functionError: string | undefined;
  let documentFetches = 0;

  beforeAll(async () => {
    site = await startSite({
      "/": (_req, res) => {
        documentFetches++;
        res
          .writeHead(200, { "content-type": "text/html" })
          .end(htmlPage("Careers", '<div id="root"></div><script src="/app.js"></script>'));
      },
      "/app.js": respond(APP, { "content-type": "text/javascript" }),
      "/api/roles": respond(JSON.stringify(["Staff Engineer", "Product Designer"]), {
        "content-type": "application/json",
      }),
      "/many": respond(
        htmlPage(
          "Many",
          Array.from({ length: 10 }, (_, i) => `<script src="/app.js?${i}"></script>`).join(""),
        ),
      ),
    });
    browser = new BrowserRenderer({
      fetcher,
      executablePath: CHROMIUM,
      limits: { maxRequests: 5 },
    });
    lambda = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", async () => {
        invoked.push(decodeURIComponent(req.url ?? ""));
        if (functionError) {
          res
            .writeHead(200, { "x-amz-function-error": "Unhandled" })
            .end(JSON.stringify({ errorMessage: functionError }));
          return;
        }
        const payload = JSON.parse(Buffer.concat(chunks).toString("utf8")) as RenderPayload;
        const answer = await answerRender(browser, payload);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => lambda.listen(0, "127.0.0.1", resolve));
    endpoint = `http://127.0.0.1:${(lambda.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await browser.close();
    await site.close();
    await new Promise((resolve) => lambda.close(resolve));
  });

  const remote = () =>
    new LambdaRenderer(FUNCTION, {
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
    });

  it("renders the page the caller fetched, with its screenshot, in the function", async () => {
    const body = Buffer.from(
      htmlPage("Careers", '<div id="root"></div><script src="/app.js"></script>'),
    );
    const page = await remote().render({
      url: `${site.origin}/`,
      document: { body, contentType: "text/html; charset=utf-8" },
      screenshot: true,
    });
    expect(invoked.at(-1)).toBe(`/2015-03-31/functions/${FUNCTION}/invocations`);
    expect(page.url).toBe(`${site.origin}/`);
    expect(page.html).toContain('<li class="job">Staff Engineer</li>');
    expect(page.html).toContain("Product Designer");
    expect([...(page.screenshot ?? Buffer.alloc(0)).subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    // The document travelled with the request: the site was not asked for it again.
    expect(documentFetches).toBe(0);
  });

  it("raises the browser's failure with its code, and a crashed function's as render_failed", async () => {
    const failed = await remote()
      .render({ url: `${site.origin}/many` })
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(FetchError);
    expect(failed).toMatchObject({ code: "too_many_requests" });
    expect((failed as Error).message).toContain("more than 5 requests");

    functionError = "Task timed out after 40.00 seconds";
    try {
      const crashed = await remote()
        .render({ url: `${site.origin}/` })
        .catch((err: unknown) => err);
      expect(crashed).toMatchObject({ code: "render_failed" });
      expect((crashed as Error).message).toContain("Task timed out after 40.00 seconds");
    } finally {
      functionError = undefined;
    }
  });

  it("is what the functions render with where the stack names the function, the browser here otherwise", () => {
    const fetch = new SafeFetcher({ allowPrivate: false });
    const onAws = { RENDER_FUNCTION_NAME: FUNCTION, CHROMIUM_PATH: CHROMIUM } as Config;
    expect(rendererOf(onAws, fetch)).toBeInstanceOf(LambdaRenderer);
    expect(rendererOf({ CHROMIUM_PATH: CHROMIUM } as Config, fetch)).toBeInstanceOf(
      BrowserRenderer,
    );
  });
});
