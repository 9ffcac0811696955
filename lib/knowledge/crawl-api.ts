import { ApiError } from "../errors.js";
import { createModule } from "../http/app.js";
import { type Crawls, toPublicCrawl, toPublicPage } from "./crawl.js";
import { cancelCrawl, getCrawl, listCrawlPages, startCrawl } from "./crawl-routes.js";
import { checkedUrl } from "./url-input.js";

export interface CrawlApiDeps {
  crawls: Crawls;
  /** ALLOW_PRIVATE_URLS: lets seeds point at loopback and private hosts (development and tests). */
  allowPrivate: boolean;
}

/** Site crawls: /api/knowledge/crawl/* */
export function crawlApi({ crawls, allowPrivate }: CrawlApiDeps) {
  const app = createModule();

  app.openapi(startCrawl, async (c) => {
    const body = c.req.valid("json");
    const seedUrl = checkedUrl(body.seedUrl, "seedUrl", allowPrivate);
    const crawl = await crawls.start(c.get("workspaceId"), { ...body, seedUrl });
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
