import { createModule } from "../../http/app.js";
import type { Quotas } from "../../limits/quotas.js";
import type { Sources } from "../sources/sources.js";
import { checkedUrl } from "../sources/url-input.js";
import {
  cancelCrawl,
  deleteCrawlSources,
  getCrawl,
  listCrawlPages,
  listCrawls,
  patchCrawl,
  startCrawl,
} from "./contract.js";
import { type Crawls, toPublicCrawl, toPublicPage } from "./crawls.js";

export interface CrawlRoutesDeps {
  crawls: Crawls;
  sources: Sources;
  /** ALLOW_PRIVATE_URLS: lets seeds point at loopback and private hosts (development and tests). */
  allowPrivate: boolean;
  quotas: Quotas;
}

/** Site crawls: /api/knowledge/crawl/* */
export function crawlRoutes({ crawls, sources, allowPrivate, quotas }: CrawlRoutesDeps) {
  const app = createModule();

  app.openapi(listCrawls, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const page = await crawls.list(c.get("workspaceId"), limit, cursor);
    return c.json({ crawls: page.items.map(toPublicCrawl), nextCursor: page.nextCursor }, 200);
  });

  app.openapi(startCrawl, async (c) => {
    const { refresh, ...body } = c.req.valid("json");
    const workspaceId = c.get("workspaceId");
    const seedUrl = checkedUrl(body.seedUrl, "seedUrl", allowPrivate);
    // A crawl takes its whole page cap from the daily quota up front, so it never stops half way;
    // what it does not index goes back when it ends.
    const quota = await quotas.consume(workspaceId, "crawl_pages", body.maxPages);
    const crawl = await crawls.start(workspaceId, { ...body, seedUrl }, quota, { refresh });
    return c.json(
      { crawlId: crawl.crawlId, status: "indexing" as const, maxPages: crawl.maxPages },
      200,
    );
  });

  app.openapi(getCrawl, async (c) => {
    const crawl = await crawls.get(c.get("workspaceId"), c.req.valid("param").crawlId);
    return c.json(toPublicCrawl(crawl), 200);
  });

  app.openapi(listCrawlPages, async (c) => {
    const { limit, cursor, status } = c.req.valid("query");
    const { crawlId } = c.req.valid("param");
    const page = await crawls.pages(c.get("workspaceId"), crawlId, status, limit, cursor);
    return c.json({ pages: page.items.map(toPublicPage), nextCursor: page.nextCursor }, 200);
  });

  app.openapi(cancelCrawl, async (c) => {
    const crawl = await crawls.cancel(c.get("workspaceId"), c.req.valid("param").crawlId);
    return c.json(toPublicCrawl(crawl), 200);
  });

  app.openapi(patchCrawl, async (c) => {
    const { crawlId } = c.req.valid("param");
    const { refresh } = c.req.valid("json");
    const crawl = await crawls.setRefresh(c.get("workspaceId"), crawlId, refresh);
    return c.json(toPublicCrawl(crawl), 200);
  });

  app.openapi(deleteCrawlSources, async (c) => {
    const workspaceId = c.get("workspaceId");
    const { crawlId } = c.req.valid("param");
    const crawl = await crawls.get(workspaceId, crawlId);
    // Stop it first, so it creates no source after the sweep.
    if (crawl.status === "indexing") await crawls.cancel(workspaceId, crawlId);
    const released = await sources.releaseCrawl(workspaceId, crawl.refreshOf ?? crawlId);
    return c.json({ crawlId, ...released }, 200);
  });

  return app;
}
