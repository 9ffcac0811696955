import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { queueWorkers } from "../../functions/manifest.js";
import { MAX_RECURSIVE_INVOCATIONS } from "../../infra/local/lineage.js";
import { logger } from "../../lib/log.js";
import { drainOnClock } from "../support/queue-clock.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";

/**
 * A crawl is a chain of the crawl worker's own messages: each page queues the pages it links to,
 * a page whose host is busy goes back to the queue until its turn, and the crawl's watch comes
 * back every CRAWL_WATCH_SECONDS. On a site of a few hundred pages that chain is far longer than
 * the 16 invocations after which Lambda stops a loop, so the manifest lets the crawl worker loop
 * (`recursion`), bounded by the crawl's maxPages instead.
 *
 * Through the whole local runtime: a paginated blog of 120 pages on 127.0.0.1 (each listing page
 * links its two posts and the next listing page, 40 deep), crawled with maxPages 100 at a small
 * pace (CRAWL_POLITENESS_MS=10). The depth is the point, not the size: two posts a listing keep
 * several pages in flight at each hop, as a wider blog would, for a third of the work. The blog
 * asks for a two-minute pause once (a 429 with Retry-After on its second listing page): the pace
 * holds the host, so every page that comes meanwhile is sent back to the queue until the host's
 * turn. Delayed messages are not waited for: the clock is moved by hand to the next one's time
 * (Date only), so the test takes the time of its work, not of its delays.
 */

const LISTINGS = 40;
const POSTS_PER_LISTING = 2;
const MAX_PAGES = 100;
const worker = queueWorkers.find((w) => w.name === "crawl-worker");

let rt: TestRuntime;
const sites: Site[] = [];

beforeAll(async () => {
  // The fixture sites are on loopback, reachable only with this development switch.
  process.env.ALLOW_PRIVATE_URLS = "true";
  process.env.CRAWL_POLITENESS_MS = "10";
  rt = await startTestRuntime();
});
afterAll(async () => {
  await rt?.close();
  await Promise.all(sites.map((site) => site.close()));
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A blog: listing pages 1 to LISTINGS (the first is `/`), each with its posts and a next link. */
async function blog(): Promise<Site> {
  const site = await startSite();
  sites.push(site);
  for (let n = 1; n <= LISTINGS; n++) {
    const posts = Array.from(
      { length: POSTS_PER_LISTING },
      (_, i) => (n - 1) * POSTS_PER_LISTING + i + 1,
    );
    const links = posts.map((p) => `<li><a href="/post/${p}">Post ${p}</a></li>`).join("");
    const next = n < LISTINGS ? `<a href="/page/${n + 1}">Older posts</a>` : "";
    const listing = htmlPage(
      `Blog, page ${n}`,
      `<article><h1>Blog, page ${n}</h1>${prose(`Listing ${n}`)}<ul>${links}</ul></article>${next}`,
    );
    let paused = false;
    site.route(n === 1 ? "/" : `/page/${n}`, (_req, res) => {
      if (n === 2 && !paused) {
        paused = true;
        return void res.writeHead(429, { "retry-after": "120" }).end();
      }
      res.writeHead(200, { "content-type": "text/html" }).end(listing);
    });
    for (const p of posts) {
      const post = htmlPage(
        `Post ${p}`,
        `<article><h1>Post ${p}</h1>${prose(`Post ${p}`)}</article>`,
      );
      site.route(`/post/${p}`, (_req, res) => {
        res.writeHead(200, { "content-type": "text/html" }).end(post);
      });
    }
  }
  return site;
}

interface Crawl {
  status: string;
  pagesIndexed: number;
  pagesDiscovered: number;
}

/**
 * Crawls a new blog with maxPages MAX_PAGES, running the runtime's queues until nothing is left and
 * moving the clock to each delayed message's time; answers the crawl as the API then shows it.
 */
async function crawlBlog() {
  const site = await blog();
  vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
  let deferred = 0;
  // What each crawl message came to, as the worker logs it (lines not printed: SILENT).
  vi.spyOn(logger, "info").mockImplementation((...[, extra]) => {
    if ((extra as { outcome?: unknown } | undefined)?.outcome === "deferred") deferred++;
  });
  const before = rt.runtime.queues.recursion("crawl-worker");
  const dead = rt.runtime.queues.deadLetters("crawl").length;
  const res = await rt.call("/api/knowledge/crawl", {
    method: "POST",
    json: { seedUrl: `${site.origin}/`, maxPages: MAX_PAGES, maxDepth: 50 },
  });
  expect(res.status).toBe(200);
  const { crawlId } = (await res.json()) as { crawlId: string };
  await drainOnClock(rt.runtime.queues);
  const crawl = (await (await rt.call(`/api/knowledge/crawl/${crawlId}`)).json()) as Crawl;
  const after = rt.runtime.queues.recursion("crawl-worker");
  return {
    crawl,
    deferred,
    requests: site.requests.filter((path) => path !== "/robots.txt" && path !== "/sitemap.xml"),
    dropped: after.dropped - before.dropped,
    deadLetters: rt.runtime.queues.deadLetters("crawl").length - dead,
    leftInQueue: rt.runtime.queues.pending("crawl").length,
    longestChain: after.longestChain,
  };
}

describe("a 100-page crawl of one site, through the local runtime", () => {
  it("completes at maxPages, its chain of messages far past 16 hops: the loop is allowed", async () => {
    expect(worker?.recursion?.allow).toBe(true);
    const run = await crawlBlog();
    expect(run.crawl).toMatchObject({ status: "completed", pagesIndexed: MAX_PAGES });
    // Pages waited for their host's turn in the queue while it was paused.
    expect(run.deferred).toBeGreaterThan(0);
    // The 100th page is 33 links deep: each link, turn and watch is one more invocation.
    expect(run.longestChain).toBeGreaterThan(30);
    expect(run).toMatchObject({ dropped: 0, deadLetters: 0 });
    // The loop ended by itself: no page and no watch is left in the queue.
    expect(run.leftInQueue).toBe(0);
    // maxPages ends the chain: past the cap only the pages in flight then (two invocations of
    // five records) were fetched, and the paused page again.
    expect(run.requests.length).toBeLessThanOrEqual(MAX_PAGES + 2 * 5 + 1);
  }, 300_000);

  it("is cut off past 16 hops when the manifest entry declares no recursion", async () => {
    if (!worker) throw new Error("no crawl-worker in the manifest");
    const declared = worker.recursion;
    delete worker.recursion;
    try {
      const run = await crawlBlog();
      // The pages 16 links or more from the seed were dead-lettered instead of crawled, and the
      // crawl never ends: its watch, a chain of its own, was dropped at its 17th hop too.
      expect(run.crawl.status).toBe("indexing");
      expect(run.requests).not.toContain(`/page/${MAX_RECURSIVE_INVOCATIONS + 1}`);
      expect(run.crawl.pagesIndexed).toBeLessThan(
        (MAX_RECURSIVE_INVOCATIONS + 1) * (POSTS_PER_LISTING + 1),
      );
      expect(run.dropped).toBeGreaterThan(1);
      expect(run.deadLetters).toBe(run.dropped);
    } finally {
      worker.recursion = declared;
    }
  }, 300_000);
});
