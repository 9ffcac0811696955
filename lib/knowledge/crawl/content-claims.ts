import { mapLimit } from "../../async.js";
import type { Item, Table } from "../../store/table.js";
import type { CrawlPageItem } from "./frontier.js";
import { type CrawlItem, expiredNow, helperExpiry } from "./records.js";

/**
 * Which page of a crawl stands for each content it met: `CRAWLHASH#{crawlId}#{contentHash}`,
 * created by the first page with that content; later pages with it are duplicates, not indexed.
 * A claim expires `CRAWL_HELPER_DAYS` after it is made, or once its crawl has ended.
 * `ContentClaims` is the only code that writes them.
 */
const claimPrefix = (crawlId: string) => `CRAWLHASH#${crawlId}#`;

export class ContentClaims {
  constructor(private readonly deps: { table: Table }) {}

  /** Claims a content hash for a page: undefined when it is the first, else the URL that has it. */
  async claim(page: CrawlPageItem, contentHash: string): Promise<string | undefined> {
    const item = {
      pk: page.pk,
      sk: `${claimPrefix(page.crawlId)}${contentHash}`,
      pageKey: page.pageKey,
      url: page.url,
      ...helperExpiry(),
    };
    if (await this.deps.table.create(item)) return undefined;
    const owner = await this.deps.table.get<typeof item>(item.pk, item.sk);
    return owner && owner.pageKey !== page.pageKey ? owner.url : undefined;
  }

  /** Lets the claims of an ended crawl expire now. */
  async expire(crawl: CrawlItem, nowMs = Date.now()): Promise<void> {
    const { table } = this.deps;
    const claims = await table.all<Item>(crawl.pk, claimPrefix(crawl.crawlId), ["pk", "sk"]);
    await mapLimit(claims, 8, (c) => table.change(c.pk, c.sk, { set: expiredNow(nowMs) }));
  }
}
