import { createModule } from "../../http/app.js";
import type { Quotas } from "../../limits/quotas.js";
import { checkedUrl } from "../sources/url-input.js";
import { type Crawls, toPublicCrawl, toPublicPage } from "./crawls.js";
import { cancelCrawl, getCrawl, listCrawlPages, startCrawl } from "./routes.js";

export interface CrawlApiDeps {
  crawls: Crawls;
  /** ALLOW_PRIVATE_URLS: lets seeds point at loopback and private hosts (development and tests). */
  allowPrivate: boolean;
  quotas: Quotas;
}

/** Site crawls: /api/knowledge/crawl/* */
export function crawlApi({ crawls, allowPrivate, quotas }: CrawlApiDeps) {
  const app = createModule();

  app.openapi(startCrawl, async (c) => {
    const body = c.req.valid("json");
    const workspaceId = c.get("workspaceId");
    const seedUrl = checkedUrl(body.seedUrl, "seedUrl", allowPrivate);
    // A crawl takes its whole page cap from the daily quota up front, so it never stops half way;
    // what it does not index goes back when it ends.
    const quota = await quotas.consume(workspaceId, "crawl_pages", body.maxPages);
    const crawl = await crawls.start(workspaceId, { ...body, seedUrl }, quota);
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

  return app;
}
