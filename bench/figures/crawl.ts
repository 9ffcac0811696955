import type { PublicCrawl } from "../../lib/knowledge/crawl/crawls.js";
import { PAGE_KINDS } from "../../lib/web/content-type.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { DEFAULT_EXTRACT_LIMITS } from "../../lib/web/page.js";
import { readPage } from "../../lib/web/readable.js";
import type { BenchContext, Figure, Row } from "../core/figure.js";
import { interleave, time, timeSync } from "../core/measure.js";
import { summarize } from "../core/stats.js";
import { type DomName, readWith } from "../crawl/dom.js";
import { type CrawlSite, startCrawlSite } from "../crawl/site.js";

const PAGES = 200;
const QUICK_PAGES = 30;
const POLL_MS = 25;

interface Run {
  ms: number;
  /** Pages the run turned into content (indexed, extracted, readable). */
  pages: number;
  /** Until every source the crawl created was indexed (the pipeline only). */
  indexedMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One crawl through the real path: `POST /api/knowledge/crawl` in a fresh workspace, the queue
 * driver delivering page messages to the crawl worker (fetch, robots, sitemap, extraction, a
 * `url` source per page) until `GET` says `completed`; then, timed on, until the index worker
 * has drained the index queue the crawl filled.
 */
async function crawlOnce(ctx: BenchContext, site: CrawlSite, round: number): Promise<Run> {
  const runtime = await ctx.runtime();
  const { key } = await ctx.workspace(`crawl ${round}`);
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const started = performance.now();
  const response = await fetch(`${runtime.url}/api/knowledge/crawl`, {
    method: "POST",
    headers,
    body: JSON.stringify({ seedUrl: site.seed, maxPages: site.pages.length }),
  });
  if (!response.ok) throw new Error(`POST /api/knowledge/crawl answered ${response.status}`);
  const { crawlId } = (await response.json()) as { crawlId: string };
  let crawl: PublicCrawl;
  for (;;) {
    const res = await fetch(`${runtime.url}/api/knowledge/crawl/${crawlId}`, { headers });
    crawl = (await res.json()) as PublicCrawl;
    if (crawl.status !== "indexing") break;
    await sleep(POLL_MS);
  }
  const ms = performance.now() - started;
  if (crawl.status !== "completed") throw new Error(`crawl ${crawlId} ended ${crawl.status}`);
  // The crawl's delayed watch message keeps the queues from being idle: wait on the index queue.
  while (runtime.queues.pending("index").length > 0) await sleep(POLL_MS);
  return { ms, pages: crawl.pagesIndexed, indexedMs: performance.now() - started };
}

function row(name: string, runs: Run[], floor?: string): Row {
  const timeMs = summarize(runs.map((r) => r.ms));
  const pages = runs[0]?.pages ?? 0;
  const indexed = runs.flatMap((r) => (r.indexedMs === undefined ? [] : [r.indexedMs]));
  return {
    name,
    ...(floor ? { floor } : {}),
    cells: {
      time: timeMs,
      indexed: indexed.length > 0 ? summarize(indexed) : null,
      pages,
      rate: pages / (timeMs.median / 1000),
      perPage: timeMs.median / Math.max(pages, 1),
    },
  };
}

const columns = [
  { key: "time", label: "time", unit: "ms" },
  { key: "indexed", label: "until all indexed", unit: "ms" },
  { key: "pages", label: "pages", digits: 0 },
  { key: "rate", label: "throughput", unit: "pages/s" },
  { key: "perPage", label: "per page", unit: "ms", digits: 2 },
];

export const figure: Figure = {
  number: 4,
  id: "crawl",
  title: "Crawl throughput",
  description:
    `A ${PAGES}-page fixture site served by the bench on 127.0.0.1 (a home page and articles of ` +
    "3 to 7 KB of prose in sections, site navigation, related links, a footer; robots.txt and a " +
    "sitemap of every page), crawled from `POST /api/knowledge/crawl` until `completed` through " +
    "the local runtime's queue driver and crawl worker (robots, sitemap, fetch, extraction, a " +
    "source per page), at the default, adaptive pace (`CRAWL_POLITENESS_MS` 100 ms floor). Floor: " +
    "`readPage` (jsdom, Readability, Turndown; the crawl runs it in a sandbox thread) alone on " +
    "the same pages, in process. A second table sets jsdom against linkedom on the DOM-bound " +
    "part of extraction.",
  async run(ctx) {
    const site = await startCrawlSite(ctx.quick ? QUICK_PAGES : PAGES);
    try {
      // A crawl of 200 pages takes about a minute on the 2-core machine: two of them fit the budget.
      const rounds = ctx.quick ? 1 : 2;
      const fetcher = new SafeFetcher({ allowPrivate: true });
      const readable: Record<DomName, string[]> = { jsdom: [], linkedom: [] };
      const dom = (name: DomName) => (): Run => {
        const texts: string[] = [];
        const ms = timeSync(() => {
          for (const { html, url } of site.pages) texts.push(readWith(name, html, url).text);
        });
        readable[name] = texts;
        return { ms, pages: texts.filter((text) => text.length > 0).length };
      };
      ctx.log(`crawl: ${site.pages.length} pages × ${rounds}`);
      const runs = await interleave(rounds, {
        pipeline: (round) => crawlOnce(ctx, site, round),
        fetch: async () => ({
          ms: await time(async () => {
            for (const { url } of site.pages) await fetcher.fetch(url, { accept: PAGE_KINDS });
          }),
          pages: site.pages.length,
        }),
        extract: () => {
          const { maxLinks } = DEFAULT_EXTRACT_LIMITS;
          let pages = 0;
          const ms = timeSync(() => {
            for (const { html, url } of site.pages) {
              pages += readPage({ body: html, url, maxLinks }) ? 1 : 0;
            }
          });
          return { ms, pages };
        },
        jsdom: dom("jsdom"),
        linkedom: dom("linkedom"),
      });
      const floor = "readPage alone (jsdom + Readability + Turndown)";
      const same = readable.jsdom.filter((text, i) => text === readable.linkedom[i]).length;
      const lighter = "linkedom: parse + links + Readability";
      return {
        tables: [
          {
            caption: `Crawl of ${site.pages.length} pages to \`completed\``,
            compare: "time",
            columns,
            rows: [
              row("POST /api/knowledge/crawl → completed", runs.pipeline, floor),
              row("fetch alone (SafeFetcher, one page at a time)", runs.fetch, floor),
              row(floor, runs.extract),
            ],
          },
          {
            caption: "DOM for extraction: jsdom against linkedom (same pages, Readability on each)",
            compare: "time",
            columns: columns.filter((c) => c.key !== "indexed"),
            rows: [
              row("jsdom: parse + links + Readability", runs.jsdom, lighter),
              row(lighter, runs.linkedom),
            ],
          },
        ],
        notes: [
          `Readability on linkedom found an article on ${runs.linkedom[0]?.pages ?? 0} of ` +
            `${site.pages.length} pages (jsdom: ${runs.jsdom[0]?.pages ?? 0}), and its text was ` +
            `identical to jsdom's on ${same} of them.`,
          "`until all indexed` runs on from the same start until the index worker has drained " +
            "the index queue the crawl filled; the crawl's own time ends at `completed`.",
          "The crawl runs in the same process as the rest of the runtime, its worker at the " +
            "local driver's concurrency (at most 2 batches at once).",
        ],
      };
    } finally {
      await site.site.close();
    }
  },
};
