import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import { openApiDocument } from "../../lib/http/docs.js";
import { crawlApi } from "../../lib/knowledge/crawl/api.js";
import { Crawler } from "../../lib/knowledge/crawl/crawler.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { crawlRoutes } from "../../lib/knowledge/crawl/routes.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { PoliteSession } from "../../lib/web/session.js";
import { roomyQuotas, startAws, type TestAws } from "../support/aws.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/** The bearer token is the workspace id: tenancy without the key store. */
const testAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("workspaceId", (c.req.header("authorization") ?? "").replace(/^Bearer /, ""));
  await next();
};

describe("crawl API", () => {
  let aws: TestAws;
  let site: Site;
  let crawls: Crawls;
  let crawler: Crawler;
  let strictApp: ReturnType<typeof createServiceApp>;
  let localApp: ReturnType<typeof createServiceApp>;

  const call = (
    app: ReturnType<typeof createServiceApp>,
    method: string,
    path: string,
    body?: unknown,
    workspace = "ws_api_a",
  ) =>
    app.request(path, {
      method,
      headers: { authorization: `Bearer ${workspace}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  /** Runs each crawl page message once through the worker, as the queue would deliver it. */
  async function drain(queueName: string) {
    const delivery = { receiveCount: 1, maxReceiveCount: 3 };
    const handled = new Set<string>();
    for (;;) {
      const fresh = aws.queues.pending(queueName).filter((body) => !handled.has(body));
      if (fresh.length === 0) return;
      for (const body of fresh) {
        handled.add(body);
        const message = JSON.parse(body);
        if (message.kind === "crawl-page") await crawler.handle(message, delivery);
      }
    }
  }

  beforeAll(async () => {
    aws = await startAws();
    site = await startSite({
      "/": respond(
        htmlPage("Root", `<article>${prose("Root")}</article><a href="/a">a</a><a href="/b">b</a>`),
      ),
      "/a": respond(htmlPage("A", `<article>${prose("A")}</article>`)),
    });
    const queue = aws.queue("crawl-api");
    crawls = new Crawls({ table: aws.table, queue, watchSeconds: 60 });
    const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 2000 });
    crawler = new Crawler({
      table: aws.table,
      blobs: aws.blobs,
      queue,
      sources: new Sources({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("idx") }),
      fetcher,
      session: new PoliteSession(fetcher, { politenessMs: 0 }),
      stallMs: 60_000,
      watchSeconds: 60,
    });
    strictApp = createServiceApp({
      authenticate: testAuth,
      modules: [crawlApi({ crawls, allowPrivate: false, quotas: roomyQuotas(aws.table) })],
    });
    localApp = createServiceApp({
      authenticate: testAuth,
      modules: [crawlApi({ crawls, allowPrivate: true, quotas: roomyQuotas(aws.table) })],
    });
  });
  afterAll(async () => {
    await site.close();
    await aws.close();
  });

  it("starts a crawl with the default cap and reports it", async () => {
    const res = await call(localApp, "POST", "/api/knowledge/crawl", {
      seedUrl: `${site.origin}/?utm_source=x#top`,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { crawlId: string };
    expect(body).toEqual({
      crawlId: expect.stringMatching(/^crawl_/),
      status: "indexing",
      maxPages: 100,
    });

    const got = await call(localApp, "GET", `/api/knowledge/crawl/${body.crawlId}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual({
      crawlId: body.crawlId,
      seedUrl: `${site.origin}/`,
      status: "indexing",
      maxPages: 100,
      maxDepth: 10,
      includeSubdomains: false,
      includePaths: [],
      excludePaths: [],
      pagesDiscovered: 1,
      pagesIndexed: 0,
      pagesFailed: 0,
      pagesSkipped: 0,
      startedAt: expect.any(String),
      finishedAt: null,
      lastError: null,
    });
  });

  it.each([
    [{ seedUrl: "file:///etc/passwd" }, "seedUrl"],
    [{ seedUrl: "http://127.0.0.1/" }, "seedUrl"],
    [{ seedUrl: "http://[::ffff:169.254.169.254]/" }, "seedUrl"],
    [{ seedUrl: "http://localhost:8080/" }, "seedUrl"],
    [{ seedUrl: "http://user:pw@example.com/" }, "seedUrl"],
    [{ seedUrl: "https://example.com/", maxPages: 1001 }, "maxPages"],
    [{ seedUrl: "https://example.com/", maxPages: 0 }, "maxPages"],
    [{ seedUrl: "https://example.com/", includePaths: ["blog"] }, "includePaths.0"],
    [{ seedUrl: "https://example.com/", excludePaths: [`/${"a".repeat(200)}`] }, "excludePaths.0"],
    [{ seedUrl: "https://example.com/", includePaths: Array(21).fill("/a") }, "includePaths"],
    [{ seedUrl: "https://example.com/", depth: 3 }, ""],
    [{}, "seedUrl"],
  ])("answers 400 for %j without fetching anything", async (body, path) => {
    const res = await call(strictApp, "POST", "/api/knowledge/crawl", body);
    expect(res.status).toBe(400);
    const error = (
      (await res.json()) as { error: { code: string; details: { issues: { path: string }[] } } }
    ).error;
    expect(error.code).toBe("validation_failed");
    expect(error.details.issues.map((i) => i.path)).toContain(path);
  });

  it("accepts the documented maximum", async () => {
    const res = await call(strictApp, "POST", "/api/knowledge/crawl", {
      seedUrl: "https://example.com/docs/",
      maxPages: 1000,
      includePaths: Array(20).fill(`/${"a".repeat(199)}`),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ maxPages: 1000 });
  });

  it("reports each URL in pages, with a cursor", async () => {
    const started = (await (
      await call(localApp, "POST", "/api/knowledge/crawl", { seedUrl: `${site.origin}/` })
    ).json()) as { crawlId: string };
    await drain("crawl-api");
    const base = `/api/knowledge/crawl/${started.crawlId}`;
    const crawl = (await (await call(localApp, "GET", base)).json()) as Record<string, unknown>;
    expect(crawl).toMatchObject({ status: "completed", pagesIndexed: 2, pagesSkipped: 1 });

    const first = (await (await call(localApp, "GET", `${base}/pages?limit=2`)).json()) as {
      pages: unknown[];
      nextCursor: string;
    };
    expect(first.pages).toHaveLength(2);
    const rest = (await (
      await call(localApp, "GET", `${base}/pages?limit=2&cursor=${first.nextCursor}`)
    ).json()) as { pages: unknown[]; nextCursor: null };
    expect(rest).toMatchObject({ nextCursor: null });
    expect(rest.pages).toHaveLength(1);

    const skipped = (await (
      await call(localApp, "GET", `${base}/pages?status=skipped`)
    ).json()) as {
      pages: unknown[];
    };
    expect(skipped.pages).toEqual([
      {
        url: `${site.origin}/b`,
        status: "skipped",
        reason: "http_error",
        message: expect.stringContaining("404"),
        httpStatus: 404,
        depth: 1,
        sourceId: null,
        discoveredAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    ]);
    expect((await call(localApp, "DELETE", base)).status).toBe(409);
  });

  it("cancels a running crawl, and keeps other workspaces out", async () => {
    const started = (await (
      await call(localApp, "POST", "/api/knowledge/crawl", { seedUrl: `${site.origin}/` })
    ).json()) as { crawlId: string };
    const path = `/api/knowledge/crawl/${started.crawlId}`;
    for (const method of ["GET", "DELETE"]) {
      expect((await call(localApp, method, path, undefined, "ws_api_b")).status).toBe(404);
      expect((await call(localApp, method, "/api/knowledge/crawl/kb_not_a_crawl")).status).toBe(
        404,
      );
    }
    expect((await call(localApp, "GET", `${path}/pages`, undefined, "ws_api_b")).status).toBe(404);
    const res = await call(localApp, "DELETE", path);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "cancelled", finishedAt: expect.any(String) });
    expect((await call(localApp, "DELETE", path)).status).toBe(200);
  });

  it("documents its four routes", () => {
    const doc = openApiDocument(crawlRoutes);
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual([
      "/api/knowledge/crawl",
      "/api/knowledge/crawl/{crawlId}",
      "/api/knowledge/crawl/{crawlId}/pages",
    ]);
  });
});
