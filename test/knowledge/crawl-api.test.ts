import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceApp } from "../../lib/http/app.js";
import { openApiDocument } from "../../lib/http/docs.js";
import { crawlContract } from "../../lib/knowledge/crawl/contract.js";
import { Crawler } from "../../lib/knowledge/crawl/crawler.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import { crawlRoutes } from "../../lib/knowledge/crawl/routes.js";
import { sourcesRoutes } from "../../lib/knowledge/sources/routes.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { PoliteSession } from "../../lib/web/session.js";
import { bearerWorkspace } from "../support/app.js";
import { retrieverOn, roomyQuotas, startAws, type TestAws } from "../support/aws.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

describe("crawl API", () => {
  let aws: TestAws;
  let site: Site;
  let crawls: Crawls;
  let crawler: Crawler;
  let strictApp: ReturnType<typeof createServiceApp>;
  let localApp: ReturnType<typeof createServiceApp>;
  /** Crawls and sources together, as the knowledge API function serves them. */
  let fullApp: ReturnType<typeof createServiceApp>;

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
    const sources = new Sources({
      table: aws.table,
      blobs: aws.blobs,
      indexQueue: aws.queue("idx"),
    });
    const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 2000 });
    crawler = new Crawler({
      table: aws.table,
      blobs: aws.blobs,
      queue,
      sources,
      fetcher,
      session: new PoliteSession(fetcher, { politenessMs: 0 }),
      stallMs: 60_000,
      watchSeconds: 60,
    });
    strictApp = createServiceApp({
      authenticate: bearerWorkspace,
      modules: [
        crawlRoutes({ crawls, sources, allowPrivate: false, quotas: roomyQuotas(aws.table) }),
      ],
    });
    localApp = createServiceApp({
      authenticate: bearerWorkspace,
      modules: [
        crawlRoutes({ crawls, sources, allowPrivate: true, quotas: roomyQuotas(aws.table) }),
      ],
    });
    fullApp = createServiceApp({
      authenticate: bearerWorkspace,
      modules: [
        crawlRoutes({ crawls, sources, allowPrivate: true, quotas: roomyQuotas(aws.table) }),
        sourcesRoutes({
          sources,
          blobs: aws.blobs,
          retriever: retrieverOn(aws),
          maxTextBytes: 10_000,
          allowPrivate: true,
          quotas: roomyQuotas(aws.table),
        }),
      ],
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
      refresh: null,
      refreshOf: null,
      metadata: {},
      chunking: {},
      render: "auto",
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
    [{ seedUrl: "https://example.com/", depth: 3 }, "depth"],
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

  it("adds a URL once: 200 created, then 200 with the same source, however it is spelled", async () => {
    const first = await call(
      fullApp,
      "POST",
      "/api/knowledge",
      { url: `${site.origin}/a` },
      "ws_once",
    );
    expect(first.status).toBe(200);
    const created = (await first.json()) as { id: string; created: boolean };
    expect(created).toMatchObject({ status: "indexing", created: true });
    const again = await call(
      fullApp,
      "POST",
      "/api/knowledge",
      { url: `${site.origin}/a?utm_source=mail#top`, refresh: "weekly" },
      "ws_once",
    );
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ id: created.id, status: "indexing", created: false });
    const got = await call(fullApp, "GET", `/api/knowledge/${created.id}`, undefined, "ws_once");
    expect(await got.json()).toMatchObject({ refresh: "weekly", last_checked_at: null });
    const list = await call(fullApp, "GET", "/api/knowledge?type=url", undefined, "ws_once");
    expect(((await list.json()) as { sources: unknown[] }).sources).toHaveLength(1);
    const text = await call(fullApp, "POST", "/api/knowledge", { text: "x", refresh: "daily" });
    expect(text.status).toBe(400);
  });

  it("lists crawls newest first with a cursor, and answers 400 to unknown parameters", async () => {
    const ws = "ws_listing";
    const started: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call(
        localApp,
        "POST",
        "/api/knowledge/crawl",
        { seedUrl: `${site.origin}/` },
        ws,
      );
      started.push(((await res.json()) as { crawlId: string }).crawlId);
    }
    const first = (await (
      await call(fullApp, "GET", "/api/knowledge/crawl?limit=2", undefined, ws)
    ).json()) as { crawls: Array<{ crawlId: string }>; nextCursor: string };
    const rest = (await (
      await call(fullApp, "GET", `/api/knowledge/crawl?cursor=${first.nextCursor}`, undefined, ws)
    ).json()) as { crawls: Array<{ crawlId: string }>; nextCursor: null };
    expect([...first.crawls, ...rest.crawls].map((c) => c.crawlId)).toEqual(started.reverse());
    expect(rest.nextCursor).toBeNull();
    const other = await call(fullApp, "GET", "/api/knowledge/crawl", undefined, "ws_nobody");
    expect(await other.json()).toEqual({ crawls: [], nextCursor: null });
    for (const path of [
      "/api/knowledge/crawl?limit=2&sort=old",
      `/api/knowledge/crawl/${started[0]}/pages?x=1`,
    ]) {
      const res = await call(fullApp, "GET", path, undefined, ws);
      expect(res.status, path).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "validation_failed" } });
    }
  });

  it("lists a crawl's sources and deletes them together, leaving other sources", async () => {
    const ws = "ws_cleanup";
    const text = await call(fullApp, "POST", "/api/knowledge", { text: "# Keep\n\nkeep me" }, ws);
    const kept = ((await text.json()) as { id: string }).id;
    const res = await call(
      localApp,
      "POST",
      "/api/knowledge/crawl",
      { seedUrl: `${site.origin}/` },
      ws,
    );
    const { crawlId } = (await res.json()) as { crawlId: string };
    await drain("crawl-api");
    const listed = (await (
      await call(fullApp, "GET", `/api/knowledge?crawl_id=${crawlId}`, undefined, ws)
    ).json()) as { sources: Array<{ crawl_id: string; type: string }> };
    expect(listed.sources).toHaveLength(2);
    expect(listed.sources.every((s) => s.crawl_id === crawlId && s.type === "url")).toBe(true);

    const removed = await call(
      fullApp,
      "DELETE",
      `/api/knowledge/crawl/${crawlId}/sources`,
      undefined,
      ws,
    );
    expect(removed.status).toBe(200);
    expect(await removed.json()).toEqual({ crawlId, deleted: 2, kept: 0 });
    const after = (await (await call(fullApp, "GET", "/api/knowledge", undefined, ws)).json()) as {
      sources: Array<{ id: string }>;
    };
    expect(after.sources.map((s) => s.id)).toEqual([kept]);
    // The crawl stays, with its report.
    expect(
      (await call(fullApp, "GET", `/api/knowledge/crawl/${crawlId}`, undefined, ws)).status,
    ).toBe(200);
    const elsewhere = await call(
      fullApp,
      "DELETE",
      `/api/knowledge/crawl/${crawlId}/sources`,
      undefined,
      "ws_x",
    );
    expect(elsewhere.status).toBe(404);
  });

  it("files every page a crawl indexed or refreshed under it; deleting keeps what else holds", async () => {
    const ws = "ws_owners";
    const crawl = async (body: object) => {
      const res = await call(localApp, "POST", "/api/knowledge/crawl", body, ws);
      const { crawlId } = (await res.json()) as { crawlId: string };
      await drain("crawl-api");
      return crawlId;
    };
    const listed = async (query: string) => {
      const res = await call(fullApp, "GET", `/api/knowledge?${query}`, undefined, ws);
      expect(res.status, query).toBe(200);
      const { sources } = (await res.json()) as {
        sources: Array<{ id: string; source_url_or_path: string; crawl_id: string | null }>;
      };
      return sources;
    };
    const urls = (sources: Array<{ source_url_or_path: string }>) =>
      sources.map((s) => new URL(s.source_url_or_path).pathname).sort();
    const pagesIndexed = async (crawlId: string) =>
      (
        (await (
          await call(fullApp, "GET", `/api/knowledge/crawl/${crawlId}`, undefined, ws)
        ).json()) as { pagesIndexed: number }
      ).pagesIndexed;

    const first = await crawl({ seedUrl: `${site.origin}/` });
    const second = await crawl({ seedUrl: `${site.origin}/` });
    const sub = await crawl({ seedUrl: `${site.origin}/a`, maxPages: 1 });
    for (const [crawlId, pages] of [
      [first, ["/", "/a"]],
      [second, ["/", "/a"]],
      [sub, ["/a"]],
    ] as const) {
      const own = await listed(`crawl_id=${crawlId}`);
      expect(urls(own), crawlId).toEqual(pages);
      expect(own).toHaveLength(await pagesIndexed(crawlId));
    }
    // Two sources in all, each shown with the crawl that added it first.
    const all = await listed("");
    expect(all).toHaveLength(2);
    expect(all.every((s) => s.crawl_id === first)).toBe(true);
    // One value or several, in either spelling.
    expect(urls(await listed(`crawl_id=${sub}&crawl_id=${first}`))).toEqual(["/", "/a"]);
    expect(urls(await listed(`crawl_id=${sub},${second}&type=url`))).toEqual(["/", "/a"]);
    expect(await listed("crawl_id=crawl_unknown")).toEqual([]);

    // The page added directly too stays while the crawls let go; the other goes with the last.
    const root = all.find((s) => new URL(s.source_url_or_path).pathname === "/");
    const added = await call(fullApp, "POST", "/api/knowledge", { url: `${site.origin}/` }, ws);
    expect(await added.json()).toMatchObject({ id: root?.id, status: "indexing" });
    const release = async (crawlId: string) => {
      const res = await call(
        fullApp,
        "DELETE",
        `/api/knowledge/crawl/${crawlId}/sources`,
        undefined,
        ws,
      );
      expect(res.status).toBe(200);
      return res.json();
    };
    expect(await release(second)).toEqual({ crawlId: second, deleted: 0, kept: 2 });
    expect(await release(sub)).toEqual({ crawlId: sub, deleted: 0, kept: 1 });
    expect(await release(first)).toEqual({ crawlId: first, deleted: 1, kept: 1 });
    expect(urls(await listed(""))).toEqual(["/"]);
    expect(await release(first)).toEqual({ crawlId: first, deleted: 0, kept: 0 });
  });

  it("schedules a crawl's refresh and stops it; a scheduled run's schedule is its first crawl's", async () => {
    const ws = "ws_schedule";
    const res = await call(
      localApp,
      "POST",
      "/api/knowledge/crawl",
      { seedUrl: `${site.origin}/`, refresh: "weekly" },
      ws,
    );
    const { crawlId } = (await res.json()) as { crawlId: string };
    const stored = async () =>
      (await aws.table.get<Record<string, unknown> & { pk: string; sk: string }>(
        `WS#${ws}`,
        `CRAWL#${crawlId}`,
      )) ?? {};
    expect(await stored()).toMatchObject({
      refresh: "weekly",
      gsi2pk: expect.stringMatching(/^REFRESH#weekly#\d+$/),
    });
    const daily = await call(
      localApp,
      "PATCH",
      `/api/knowledge/crawl/${crawlId}`,
      { refresh: "daily" },
      ws,
    );
    expect(await daily.json()).toMatchObject({ crawlId, refresh: "daily", refreshOf: null });
    expect(await stored()).toMatchObject({ gsi2pk: expect.stringMatching(/^REFRESH#daily#\d+$/) });
    const off = await call(
      localApp,
      "PATCH",
      `/api/knowledge/crawl/${crawlId}`,
      { refresh: null },
      ws,
    );
    expect(await off.json()).toMatchObject({ refresh: null });
    expect(await stored()).not.toHaveProperty("gsi2pk");
    for (const body of [{}, { refresh: "hourly" }, { refresh: "daily", maxPages: 3 }]) {
      const bad = await call(localApp, "PATCH", `/api/knowledge/crawl/${crawlId}`, body, ws);
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    const run = await crawls.start(
      ws,
      {
        seedUrl: `${site.origin}/`,
        maxPages: 5,
        maxDepth: 1,
        includeSubdomains: false,
        includePaths: [],
        excludePaths: [],
      },
      undefined,
      { refreshOf: crawlId },
    );
    const refused = await call(
      localApp,
      "PATCH",
      `/api/knowledge/crawl/${run.crawlId}`,
      { refresh: "daily" },
      ws,
    );
    expect(refused.status).toBe(409);
  });

  it("documents its routes", () => {
    const doc = openApiDocument(crawlContract);
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual([
      "/api/knowledge/crawl",
      "/api/knowledge/crawl/{crawlId}",
      "/api/knowledge/crawl/{crawlId}/pages",
      "/api/knowledge/crawl/{crawlId}/sources",
    ]);
  });
});
