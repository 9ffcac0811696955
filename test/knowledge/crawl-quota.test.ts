import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServiceApp } from "../../lib/http/app.js";
import { Crawler } from "../../lib/knowledge/crawl/crawler.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import type { CrawlItem } from "../../lib/knowledge/crawl/records.js";
import { crawlRoutes } from "../../lib/knowledge/crawl/routes.js";
import { Sources } from "../../lib/knowledge/sources/sources.js";
import { Quotas } from "../../lib/limits/quotas.js";
import { wsKey } from "../../lib/store/table.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { PoliteSession } from "../../lib/web/session.js";
import { bearerWorkspace } from "../support/app.js";
import { startAws, type TestAws } from "../support/aws.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/**
 * A crawl takes its `maxPages` from the daily page quota when it starts, and gives back what it
 * did not index when it ends, however it ends: completed, failed or cancelled.
 */

const DAILY_PAGES = 10;

let aws: TestAws;
let site: Site;
let crawls: Crawls;
let crawler: Crawler;
let app: ReturnType<typeof createServiceApp>;
let workspaces = 0;
const QUEUE = "crawl-quota";

beforeAll(async () => {
  aws = await startAws();
  site = await startSite({
    "/": respond(
      htmlPage(
        "Home",
        `<article>${prose("Home")}</article><a href="/pricing">Pricing</a><a href="/gone">Gone</a>`,
      ),
    ),
    "/pricing": respond(htmlPage("Pricing", `<article>${prose("Pricing")}</article>`)),
  });
  const queue = aws.queue(QUEUE);
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
  const quotas = new Quotas(aws.table, {
    crawl_pages: DAILY_PAGES,
    upload_bytes: 0,
    model_calls: 0,
    competitor_checks: 0,
    exports: 0,
    reindexes: 0,
  });
  app = createServiceApp({
    authenticate: bearerWorkspace,
    modules: [
      crawlRoutes({
        crawls,
        sources: new Sources({ table: aws.table, blobs: aws.blobs, indexQueue: aws.queue("idx") }),
        allowPrivate: true,
        quotas,
      }),
    ],
  });
});
afterAll(async () => {
  await site.close();
  await aws.close();
});

const freshWorkspace = () => `ws_crawlquota${++workspaces}`;

const call = (workspaceId: string, method: string, path: string, body?: unknown) =>
  app.request(path, {
    method,
    headers: { authorization: `Bearer ${workspaceId}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

async function startCrawl(workspaceId: string, seedUrl: string, maxPages: number) {
  const res = await call(workspaceId, "POST", "/api/knowledge/crawl", { seedUrl, maxPages });
  return { status: res.status, crawlId: ((await res.json()) as { crawlId?: string }).crawlId };
}

/** Runs every crawl page message once through the worker, as the queue would deliver it. */
async function runCrawls() {
  const handled = new Set<string>();
  for (;;) {
    const fresh = aws.queues.pending(QUEUE).filter((body) => !handled.has(body));
    if (fresh.length === 0) return;
    for (const body of fresh) {
      handled.add(body);
      const message = JSON.parse(body);
      if (message.kind === "crawl-page") {
        await crawler.handle(message, { receiveCount: 1, maxReceiveCount: 3 });
      }
    }
  }
}

async function pagesUsed(workspaceId: string): Promise<number> {
  const day = new Date().toISOString().slice(0, 10);
  const counter = await aws.table.get<{ pk: string; sk: string; used: number }>(
    wsKey(workspaceId),
    `QUOTA#${day}#crawl_pages`,
  );
  return counter?.used ?? 0;
}

const crawlOf = (workspaceId: string, crawlId: string | undefined) =>
  crawls.get(workspaceId, crawlId ?? "");

describe("the page quota of crawls", () => {
  it("gives back every page of crawls whose host does not resolve", async () => {
    const ws = freshWorkspace();
    for (let i = 0; i < 4; i++) {
      const started = await startCrawl(ws, "https://example.invalid/", DAILY_PAGES);
      expect(started.status).toBe(200);
      expect(await pagesUsed(ws)).toBe(DAILY_PAGES);
      await runCrawls();
      expect(await crawlOf(ws, started.crawlId)).toMatchObject({
        status: "completed",
        pagesIndexed: 0,
        pagesFailed: 1,
      });
      expect(await pagesUsed(ws)).toBe(0);
    }
  });

  it("keeps the pages a crawl indexed and gives back those it skipped or never found", async () => {
    const ws = freshWorkspace();
    const started = await startCrawl(ws, `${site.origin}/`, 8);
    await runCrawls();
    const crawl = await crawlOf(ws, started.crawlId);
    expect(crawl).toMatchObject({ status: "completed", pagesIndexed: 2, pagesSkipped: 1 });
    expect(await pagesUsed(ws)).toBe(2);
    expect((crawl as CrawlItem).quota).toMatchObject({ amount: 8, refunded: 6 });
    // Room for another crawl of the other eight pages.
    expect((await startCrawl(ws, `${site.origin}/`, 8)).status).toBe(200);
    expect((await startCrawl(ws, `${site.origin}/`, 1)).status).toBe(429);
  });

  it("gives back a cancelled crawl's pages once, however many cancel it at once", async () => {
    const ws = freshWorkspace();
    const running = await startCrawl(ws, `${site.origin}/`, 4);
    const cancelled = await startCrawl(ws, "https://example.invalid/", 6);
    expect(await pagesUsed(ws)).toBe(DAILY_PAGES);

    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        call(ws, "DELETE", `/api/knowledge/crawl/${cancelled.crawlId}`),
      ),
    );
    expect(answers.map((res) => res.status)).toEqual(Array(8).fill(200));
    expect(await pagesUsed(ws)).toBe(4);
    expect((await crawlOf(ws, running.crawlId)).status).toBe("indexing");
    expect((await crawlOf(ws, cancelled.crawlId)).quota).toMatchObject({ refunded: 6 });
  });
});
