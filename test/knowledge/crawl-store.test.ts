import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContentClaims } from "../../lib/knowledge/crawl/content-claims.js";
import { Crawls } from "../../lib/knowledge/crawl/crawls.js";
import {
  CrawlFrontier,
  type CrawlPageItem,
  type Discovery,
  maxDiscovered,
  type PageOutcome,
} from "../../lib/knowledge/crawl/frontier.js";
import { HostPace } from "../../lib/knowledge/crawl/host-pace.js";
import {
  CRAWL_HELPER_DAYS,
  type CrawlItem,
  CrawlRecords,
} from "../../lib/knowledge/crawl/records.js";
import { type QuotaCharge, Quotas } from "../../lib/limits/quotas.js";
import { type Item, Table, wsKey } from "../../lib/store/table.js";
import { FetchError } from "../../lib/web/errors.js";
import { startAws, type TestAws } from "../support/aws.js";

/**
 * The crawl state machine against dynalite, one transition at a time: what the table holds and
 * what the queue receives after each call, including the calls that must change nothing.
 */

const WS = "ws_crawl_store";
const ORIGIN = "https://site.example";
const WATCH_SECONDS = 42;

/** What the store sends: a page to crawl (`pageKey`) or a watchdog check. */
interface Sent {
  kind: string;
  workspaceId: string;
  crawlId: string;
  pageKey?: string;
}

/** The real queue, also noting each message sent and its delay. */
function recordingQueue(name: string) {
  const queue = aws.queue(name);
  const sent: Array<{ message: Sent; delaySeconds: number }> = [];
  return {
    sqs: queue.sqs,
    url: queue.url,
    sent,
    async send(message: Sent, delaySeconds = 0) {
      sent.push({ message, delaySeconds });
      await queue.send(message, delaySeconds);
    },
    async sendAll(messages: Sent[]) {
      sent.push(...messages.map((message) => ({ message, delaySeconds: 0 })));
      await queue.sendAll(messages);
    },
  };
}

let aws: TestAws;
let queues = 0;

beforeAll(async () => {
  aws = await startAws();
});
afterAll(() => aws.close());

/** A crawl's state in the table, one writer per kind of record. */
interface CrawlState {
  records: CrawlRecords;
  frontier: CrawlFrontier;
  contents: ContentClaims;
  pace: HostPace;
}

function crawlState(table: Table, queue: ReturnType<typeof recordingQueue>): CrawlState {
  const records = new CrawlRecords({ table });
  return {
    records,
    frontier: new CrawlFrontier({ table, queue, watchSeconds: WATCH_SECONDS, records }),
    contents: new ContentClaims({ table }),
    pace: new HostPace({ table }),
  };
}

interface World {
  store: CrawlState;
  crawls: Crawls;
  queue: ReturnType<typeof recordingQueue>;
  crawl: CrawlItem;
  /** The crawl as the table holds it now. */
  now(): Promise<CrawlItem>;
  pages(): Promise<CrawlPageItem[]>;
  page(path: string): Promise<CrawlPageItem>;
  /** Page keys of the page messages sent so far. */
  queued(): string[];
}

async function world(maxPages = 100, quota?: QuotaCharge): Promise<World> {
  const queue = recordingQueue(`crawl-store-${++queues}`);
  const store = crawlState(aws.table, queue);
  const crawls = new Crawls({ table: aws.table, queue, watchSeconds: WATCH_SECONDS });
  const crawl = await crawls.start(
    WS,
    {
      seedUrl: `${ORIGIN}/`,
      maxPages,
      maxDepth: 5,
      includeSubdomains: false,
      includePaths: [],
      excludePaths: [],
    },
    quota,
  );
  return {
    store,
    crawls,
    queue,
    crawl,
    now: () => crawls.get(WS, crawl.crawlId),
    pages: () => all(store, crawl),
    page: async (path) => {
      const found = (await all(store, crawl)).find((p) => p.url === `${ORIGIN}${path}`);
      if (!found) throw new Error(`no page ${path}`);
      return found;
    },
    queued: () =>
      queue.sent.flatMap(({ message }) => (message.pageKey === undefined ? [] : [message.pageKey])),
  };
}

/** The pages holding one of the crawl's index slots, by their slot items. */
async function slotHolders(w: World): Promise<string[]> {
  const slots = await aws.table.all<Item & { pageKey: string }>(
    w.crawl.pk,
    `CRAWLSLOT#${w.crawl.crawlId}#`,
  );
  return slots.map((slot) => slot.pageKey).sort();
}

async function all(store: CrawlState, crawl: CrawlItem): Promise<CrawlPageItem[]> {
  const pages: CrawlPageItem[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.frontier.listPages(crawl, undefined, 100, cursor);
    pages.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return pages;
}

const found = (...paths: string[]): Discovery[] =>
  paths.map((path) => ({ url: `${ORIGIN}${path}`, depth: 1 }));
const counts = ({ pagesDiscovered, pagesIndexed, pagesSkipped, pagesFailed }: CrawlItem) => ({
  pagesDiscovered,
  pagesIndexed,
  pagesSkipped,
  pagesFailed,
});
const indexed: PageOutcome = { status: "indexed", reason: null, message: null };

describe("starting a crawl", () => {
  it("records the seed as its first page and queues it with the watchdog", async () => {
    const w = await world();
    expect(counts(await w.now())).toEqual({
      pagesDiscovered: 1,
      pagesIndexed: 0,
      pagesSkipped: 0,
      pagesFailed: 0,
    });
    const [seed] = await w.pages();
    expect(seed).toMatchObject({ url: `${ORIGIN}/`, depth: 0, status: "queued", reason: null });
    expect(seed?.sourceId).toMatch(/^kb_/);
    expect(w.queue.sent).toEqual([
      {
        message: {
          kind: "crawl-page",
          workspaceId: WS,
          crawlId: w.crawl.crawlId,
          pageKey: seed?.pageKey,
        },
        delaySeconds: 0,
      },
      {
        message: { kind: "crawl-watch", workspaceId: WS, crawlId: w.crawl.crawlId },
        delaySeconds: WATCH_SECONDS,
      },
    ]);
  });
});

describe("the table layout", () => {
  it("keeps crawls and pages under the keys stored data already uses", async () => {
    const w = await world();
    const [seed] = await w.pages();
    expect(await aws.table.get(wsKey(WS), `CRAWL#${w.crawl.crawlId}`)).toMatchObject({
      crawlId: w.crawl.crawlId,
    });
    expect(seed?.sk).toBe(`CRAWLPAGE#${w.crawl.crawlId}#${seed?.pageKey}`);
    expect(seed?.pageKey).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("discover", () => {
  it("records each URL once, counts it, and queues only the pages to crawl", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, [
      ...found("/a", "/a", "/c"),
      { url: `${ORIGIN}/b`, depth: 2, skip: { reason: "robots", message: "robots.txt says no" } },
    ]);
    await w.store.frontier.discover(w.crawl, found("/a", "/c", "/d"));
    expect(counts(await w.now())).toMatchObject({ pagesDiscovered: 5, pagesSkipped: 1 });
    expect(await w.page("/b")).toMatchObject({
      status: "skipped",
      reason: "robots",
      message: "robots.txt says no",
      depth: 2,
    });
    const pageKeys = await Promise.all(
      ["/", "/a", "/c", "/d"].map(async (p) => (await w.page(p)).pageKey),
    );
    expect(w.queued()).toEqual(expect.arrayContaining(pageKeys));
    expect(w.queued()).toHaveLength(4);
  });

  it("queues every page it records, ten to a request", async () => {
    const w = await world();
    const paths = Array.from({ length: 25 }, (_, i) => `/many/${i}`);
    await w.store.frontier.discover(w.crawl, found(...paths));
    const name = w.queue.url.split("/").pop() ?? "";
    const pending = aws.queues
      .pending(name)
      .map((body) => JSON.parse(body) as Sent)
      .flatMap((message) => (message.pageKey ? [message.pageKey] : []));
    const keys = await Promise.all(paths.map(async (p) => (await w.page(p)).pageKey));
    // The seed's message, sent when the crawl started, and one per page found.
    expect(pending).toHaveLength(26);
    expect(pending).toEqual(expect.arrayContaining(keys));
  });

  it("writes nothing for a page this process recorded or saw recorded before", async () => {
    const w = await world();
    const writes: string[] = [];
    const table = Object.create(aws.table) as Table;
    table.create = (item: Item) => {
      writes.push(item.sk);
      return aws.table.create(item);
    };
    const store = crawlState(table, w.queue);
    // The seed was recorded by the crawl's start: a write that finds it there.
    await store.frontier.discover(w.crawl, found("/", "/a"));
    await store.frontier.discover(w.crawl, found("/a", "/", "/b"));
    expect(writes).toEqual([
      (await w.page("/")).sk,
      (await w.page("/a")).sk,
      (await w.page("/b")).sk,
    ]);
    // Another process still records each URL once.
    await w.store.frontier.discover(w.crawl, found("/a", "/b", "/c"));
    expect(counts(await w.now())).toMatchObject({ pagesDiscovered: 4 });
    expect(w.queued()).toHaveLength(4);
  });

  it("stops recording at maxDiscovered, counting the pages found before", async () => {
    expect([maxDiscovered(1), maxDiscovered(5), maxDiscovered(999), maxDiscovered(1000)]).toEqual([
      110, 150, 10_000, 10_000,
    ]);
    const w = await world(1);
    await w.store.frontier.discover(
      w.crawl,
      found(...Array.from({ length: 60 }, (_, i) => `/p${i}`)),
    );
    // The stale item still says 1 page: room is counted on the crawl as it is now.
    await w.store.frontier.discover(
      w.crawl,
      found(...Array.from({ length: 60 }, (_, i) => `/q${i}`)),
    );
    expect((await w.now()).pagesDiscovered).toBe(110);
    expect(await w.pages()).toHaveLength(110);
    await w.store.frontier.discover(w.crawl, found("/one-more"));
    expect(await w.pages()).toHaveLength(110);
  });

  it("marks no progress when it finds nothing new", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, found("/a"));
    const before = await w.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await w.store.frontier.discover(w.crawl, found("/", "/a"));
    expect((await w.now()).updatedAt).toBe(before.updatedAt);
    await w.store.frontier.discover(w.crawl, found("/b"));
    expect((await w.now()).updatedAt > before.updatedAt).toBe(true);
  });

  it("records nothing for a crawl that is gone", async () => {
    const w = await world();
    const gone = { ...w.crawl, crawlId: "crawl_gone", sk: "CRAWL#crawl_gone" };
    await w.store.frontier.discover(gone, found("/a"));
    expect(await aws.table.all(wsKey(WS), "CRAWLPAGE#crawl_gone#")).toEqual([]);
  });

  it("records nothing once the crawl stopped", async () => {
    const w = await world();
    await w.crawls.cancel(WS, w.crawl.crawlId);
    const before = await w.now();
    const sent = w.queue.sent.length;
    await w.store.frontier.discover(w.crawl, found("/late"));
    expect(counts(await w.now())).toEqual(counts(before));
    expect(await w.pages()).toHaveLength(1);
    expect(w.queue.sent).toHaveLength(sent);
  });

  it("takes at most 20 query variants of one path; later ones are skipped as a trap", async () => {
    const w = await world();
    const months = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => `/calendar?month=${from + i}`);
    // Pages found already skipped (out of scope) take no variant.
    await w.store.frontier.discover(
      w.crawl,
      months(100, 110).map((path) => ({
        url: `${ORIGIN}${path}`,
        depth: 1,
        skip: { reason: "filter" as const, message: "out" },
      })),
    );
    await w.store.frontier.discover(w.crawl, found(...months(0, 15), "/calendar", "/other?x=1"));
    await w.store.frontier.discover(w.crawl, found(...months(15, 25)));
    const pages = await w.pages();
    const calendar = pages.filter((p) => p.url.includes("/calendar?"));
    expect(calendar.filter((p) => p.status === "queued")).toHaveLength(20);
    const traps = calendar.filter((p) => p.reason === "trap");
    expect(traps.map((p) => [p.status, p.message])).toEqual(
      Array(5).fill(["skipped", "More than 20 query variants of this path"]),
    );
    expect((await w.page("/calendar")).status).toBe("queued");
    expect((await w.page("/other?x=1")).status).toBe("queued");
    expect(counts(await w.now())).toMatchObject({ pagesDiscovered: 38, pagesSkipped: 15 });
    expect(w.queued()).toHaveLength(1 + 20 + 2);
  });
});

describe("finishing pages", () => {
  it("settles a page once and counts it by its outcome", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, found("/a", "/b", "/c"));
    const [a, b, c] = await Promise.all(["/a", "/b", "/c"].map((p) => w.page(p)));
    await w.store.frontier.finishPage(w.crawl, a as CrawlPageItem, indexed);
    await w.store.frontier.finishPage(w.crawl, a as CrawlPageItem, {
      ...indexed,
      status: "failed",
    });
    await w.store.frontier.finishPage(w.crawl, b as CrawlPageItem, {
      status: "skipped",
      reason: "http_error",
      message: "404",
      httpStatus: 404,
    });
    await w.store.frontier.finishPage(w.crawl, c as CrawlPageItem, {
      status: "failed",
      reason: "timeout",
      message: "slow",
    });
    expect(counts(await w.now())).toEqual({
      pagesDiscovered: 4,
      pagesIndexed: 1,
      pagesSkipped: 1,
      pagesFailed: 1,
    });
    expect(await w.page("/a")).toMatchObject({ status: "indexed", httpStatus: null });
    expect(await w.page("/b")).toMatchObject({
      status: "skipped",
      reason: "http_error",
      httpStatus: 404,
    });
    expect(await w.page("/c")).toMatchObject({
      status: "failed",
      reason: "timeout",
      message: "slow",
    });
    expect((await w.now()).status).toBe("indexing");
  });

  it("marks progress with each page finished", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, found("/a"));
    const before = await w.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await w.store.frontier.finishPage(w.crawl, await w.page("/a"), indexed);
    expect((await w.now()).updatedAt > before.updatedAt).toBe(true);
  });

  it("fails loudly when the crawl of a page is gone", async () => {
    const w = await world();
    const seed = await w.page("/");
    await aws.table.delete(w.crawl.pk, w.crawl.sk);
    await expect(w.store.frontier.finishPage(w.crawl, seed, indexed)).rejects.toThrow(
      `Crawl ${w.crawl.crawlId} is gone`,
    );
  });

  it("counts a page finished by two deliveries at once only once", async () => {
    const w = await world();
    const [seed] = await w.pages();
    await Promise.all(
      Array.from({ length: 6 }, () =>
        w.store.frontier.finishPage(w.crawl, seed as CrawlPageItem, indexed),
      ),
    );
    expect(await w.now()).toMatchObject({ status: "completed", pagesIndexed: 1 });
  });

  it("completes the crawl when its last pending page finishes, not before", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, found("/a", "/b"));
    const [seed, a, b] = [await w.page("/"), await w.page("/a"), await w.page("/b")];
    await w.store.frontier.finishPage(w.crawl, seed, indexed);
    await w.store.frontier.finishPage(w.crawl, a, {
      status: "failed",
      reason: "timeout",
      message: "slow",
    });
    expect(await w.now()).toMatchObject({ status: "indexing", finishedAt: null });
    await w.store.frontier.finishPage(w.crawl, b, {
      status: "skipped",
      reason: "empty",
      message: "",
    });
    const done = await w.now();
    expect(done.status).toBe("completed");
    expect(Date.parse(done.finishedAt ?? "")).toBeGreaterThan(Date.parse(done.startedAt) - 1);
  });

  it("completes the crawl when it indexed maxPages, with pages still pending", async () => {
    const w = await world(2);
    await w.store.frontier.discover(w.crawl, found("/a", "/b", "/c"));
    await w.store.frontier.finishPage(w.crawl, await w.page("/"), indexed);
    expect((await w.now()).status).toBe("indexing");
    await w.store.frontier.finishPage(w.crawl, await w.page("/a"), indexed);
    expect(await w.now()).toMatchObject({ status: "completed", pagesIndexed: 2 });
  });

  it("does not reopen, re-end or count on a crawl that was cancelled", async () => {
    const w = await world();
    const cancelled = await w.crawls.cancel(WS, w.crawl.crawlId);
    await w.store.frontier.finishPage(w.crawl, await w.page("/"), {
      status: "skipped",
      reason: "cancelled",
      message: "stopped",
    });
    await w.store.frontier.discover(w.crawl, [{ url: `${ORIGIN}/late`, depth: 1 }]);
    const now = await w.now();
    expect(now).toMatchObject({ status: "cancelled", finishedAt: cancelled.finishedAt });
    // Its counters stay as the cancel left them.
    expect(now.pagesSkipped).toBe(cancelled.pagesSkipped);
    expect(now.pagesDiscovered).toBe(cancelled.pagesDiscovered);
    expect(now.updatedAt).toBe(cancelled.updatedAt);
  });
});

describe("index slots", () => {
  it("gives at most maxPages distinct pages a slot, and a page the slot it holds again", async () => {
    const w = await world(2);
    expect(await w.store.records.takeSlot(w.crawl, "p1")).toBe(true);
    expect(await w.store.records.takeSlot(w.crawl, "p1")).toBe(true);
    expect(await w.store.records.takeSlot(w.crawl, "p2")).toBe(true);
    expect(await w.store.records.takeSlot(w.crawl, "p3")).toBe(false);
    expect(await w.store.records.takeSlot(w.crawl, "p1")).toBe(true);
    expect((await w.now()).slotsTaken).toBe(2);
    expect(await slotHolders(w)).toEqual(["p1", "p2"]);
  });

  it("hands out exactly maxPages slots to pages racing for them", async () => {
    const w = await world(3);
    const taken = await Promise.all(
      Array.from({ length: 12 }, (_, i) => w.store.records.takeSlot(w.crawl, `page${i}`)),
    );
    expect(taken.filter(Boolean)).toHaveLength(3);
    expect((await w.now()).slotsTaken).toBe(3);
    expect(await slotHolders(w)).toHaveLength(3);
  });

  it("hands out exactly maxPages slots when every page races its own second delivery", async () => {
    const maxPages = 25;
    const w = await world(maxPages);
    const pages = Array.from({ length: maxPages + 15 }, (_, i) => `page${i}`);
    const taken = await Promise.all(
      [...pages, ...pages].map((page) => w.store.records.takeSlot(w.crawl, page)),
    );
    const winners = new Set(pages.filter((_, i) => taken[i] || taken[i + pages.length]));
    expect(winners.size).toBe(maxPages);
    expect(await slotHolders(w)).toEqual([...winners].sort());
    const crawl = await w.now();
    expect(crawl.slotsTaken).toBe(maxPages);
    // The crawl item does not grow with its pages: no set of their keys on it.
    expect(crawl.slots).toBeUndefined();
  });

  it("counts the slots of a crawl started before the counter, from its set", async () => {
    const w = await world(3);
    await aws.table.change(w.crawl.pk, w.crawl.sk, { add: { slots: new Set(["old1", "old2"]) } });
    const before = await w.now();
    expect(await w.store.records.takeSlot(before, "old1")).toBe(true);
    const taken = await Promise.all(
      ["new1", "new2", "new3"].map((page) => w.store.records.takeSlot(before, page)),
    );
    expect(taken.filter(Boolean)).toHaveLength(1);
    expect((await w.now()).slotsTaken).toBe(1);
  });

  it("gives no slot once the crawl stopped, not even the one a page held", async () => {
    const w = await world();
    expect(await w.store.records.takeSlot(w.crawl, "held")).toBe(true);
    await w.crawls.cancel(WS, w.crawl.crawlId);
    expect(await w.store.records.takeSlot(w.crawl, "held")).toBe(false);
    expect(await w.store.records.takeSlot(w.crawl, "new")).toBe(false);
  });
});

describe("content and politeness", () => {
  it("gives a content hash to the first page that claims it", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, found("/a", "/copy"));
    const [a, copy] = [await w.page("/a"), await w.page("/copy")];
    expect(await w.store.contents.claim(a, "hash1")).toBeUndefined();
    expect(await w.store.contents.claim(copy, "hash1")).toBe(`${ORIGIN}/a`);
    // The owner asking again (a retried message) still owns it.
    expect(await w.store.contents.claim(a, "hash1")).toBeUndefined();
    expect(await w.store.contents.claim(copy, "hash2")).toBeUndefined();
  });

  it("hands out a host's slots one gap apart, in turn, to callers racing for them", async () => {
    const w = await world();
    const claim = (host: string, now: number, aheadMs = 1e9) =>
      w.store.pace.claimSlot(w.crawl, host, 1_500, now, aheadMs);
    const slots = await Promise.all(Array.from({ length: 5 }, () => claim("site.example", 1_000)));
    const starts = slots.map((turn) => ("slot" in turn ? turn.slot : -1));
    // The floor (1.5 s) is above where the pace starts (1 s), so it is the gap.
    expect(starts.sort((x, y) => x - y)).toEqual([1_000, 2_500, 4_000, 5_500, 7_000]);
    // Further off than the caller may wait, the slot is not taken: it is told when to come back.
    expect(await claim("site.example", 2_000, 1_000)).toEqual({ retryAt: 8_500 });
    expect(await claim("site.example", 8_000)).toEqual({ slot: 8_500 });
    expect(await claim("other.example", 1_000)).toEqual({ slot: 1_000 });
  });

  it("gives callers racing for a busy host's slots one read and one write each", async () => {
    const w = await world();
    const requests: string[] = [];
    const table = Object.create(aws.table) as Table;
    table.get = (pk, sk) => {
      requests.push("get");
      return aws.table.get(pk, sk);
    };
    table.change = (pk, sk, change) => {
      requests.push("change");
      return aws.table.change(pk, sk, change);
    };
    const store = crawlState(table, w.queue);
    await store.pace.claimSlot(w.crawl, "race.example", 100, 1_000, 1e9);
    requests.length = 0;
    const slots = await Promise.all(
      Array.from({ length: 8 }, () =>
        store.pace.claimSlot(w.crawl, "race.example", 100, 1_000, 1e9),
      ),
    );
    const starts = slots.map((turn) => ("slot" in turn ? turn.slot : -1)).sort((x, y) => x - y);
    expect(starts).toEqual(Array.from({ length: 8 }, (_, i) => 2_000 + i * 1_000));
    expect(requests.filter((r) => r === "get")).toHaveLength(8);
    expect(requests.filter((r) => r === "change")).toHaveLength(8);
  });

  it("adapts a host's pace: faster while it answers quickly, never under the floor, paused by a 429", async () => {
    const w = await world();
    const host = "pace.example";
    const gapAfter = async (now: number) => {
      const first = await w.store.pace.claimSlot(w.crawl, host, 100, now, 1e9);
      const second = await w.store.pace.claimSlot(w.crawl, host, 100, now, 1e9);
      return "slot" in first && "slot" in second ? second.slot - first.slot : -1;
    };
    expect(await gapAfter(1_000)).toBe(1_000);
    for (let i = 0; i < 8; i++) {
      await w.store.pace.observe(w.crawl, host, { latencyMs: 10 }, 100);
    }
    expect(await gapAfter(10_000)).toBe(100);
    // A slow answer slows it down.
    await w.store.pace.observe(w.crawl, host, { latencyMs: 2_000 }, 100);
    expect(await gapAfter(20_000)).toBe(2_050);
    // A 429 asking for 60 s moves the next slot out that far and doubles the gap.
    const before = Date.now();
    const busy = new FetchError("http_error", "busy", 429, 60_000);
    await w.store.pace.observe(w.crawl, host, { error: busy }, 100);
    const turn = await w.store.pace.claimSlot(w.crawl, host, 100, Date.now(), 1_000);
    expect("retryAt" in turn && turn.retryAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(await gapAfter(Date.now() + 120_000)).toBe(4_100);
  });

  it("gives up on a host slot after ten contended attempts", async () => {
    const w = await world();
    let attempts = 0;
    /** A table where another caller always moved the host's slot first. */
    class Contended extends Table {
      override async change<T extends Item>(): Promise<T | undefined> {
        attempts++;
        return undefined;
      }
    }
    const contended = crawlState(new Contended(aws.table.doc, aws.table.name), w.queue);
    await w.store.pace.claimSlot(w.crawl, "busy.example", 100, 1_000, 1e9);
    await expect(
      contended.pace.claimSlot(w.crawl, "busy.example", 100, 1_000, 1e9),
    ).rejects.toThrow("Too much contention for the politeness slot of busy.example");
    expect(attempts).toBe(10);
  });

  it("lets store errors other than a failed condition through", async () => {
    const w = await world();
    const missing = crawlState(new Table(aws.table.doc, "no-such-table"), w.queue);
    await expect(missing.records.takeSlot(w.crawl, "p1")).rejects.toThrow();
    await expect(missing.records.end(w.crawl, "failed", "x")).rejects.toThrow();
  });

  it("sends a page back with the delay until its turn", async () => {
    const w = await world();
    await w.store.frontier.sendPage(w.crawl, "later", Date.now() + 10_000);
    const last = w.queue.sent.at(-1);
    expect(last?.message).toEqual({
      kind: "crawl-page",
      workspaceId: WS,
      crawlId: w.crawl.crawlId,
      pageKey: "later",
    });
    expect(last?.delaySeconds).toBeGreaterThan(9);
    expect(last?.delaySeconds).toBeLessThanOrEqual(10);
  });
});

describe("ending, recounting and nudging", () => {
  it("ends only a running crawl, once, with the counts given", async () => {
    const w = await world();
    const recounted = { pagesDiscovered: 9, pagesIndexed: 4, pagesSkipped: 3, pagesFailed: 2 };
    const ended = await w.store.records.end(w.crawl, "failed", "stuck", recounted);
    expect(ended).toMatchObject({ status: "failed", lastError: "stuck", ...recounted });
    expect(ended?.finishedAt).toBeTruthy();
    expect(await w.store.records.end(w.crawl, "completed", null)).toBeUndefined();
    expect(await w.now()).toMatchObject(recounted);
    // The recount is the truth, zeros included.
    const other = await world();
    await other.store.frontier.discover(other.crawl, found("/a"));
    const zeros = { pagesDiscovered: 0, pagesIndexed: 0, pagesSkipped: 0, pagesFailed: 0 };
    expect(await other.store.records.end(other.crawl, "completed", null, zeros)).toMatchObject(
      zeros,
    );
    expect(await w.now()).toMatchObject({ status: "failed", lastError: "stuck" });
  });

  it("recounts a crawl from its pages", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, [
      ...found("/a", "/b"),
      { url: `${ORIGIN}/x`, depth: 1, skip: { reason: "filter", message: "out" } },
    ]);
    await w.store.frontier.finishPage(w.crawl, await w.page("/a"), indexed);
    await w.store.frontier.finishPage(w.crawl, await w.page("/b"), {
      ...indexed,
      status: "failed",
    });
    const { counts: recounted, queued } = await w.store.frontier.recount(w.crawl);
    expect(recounted).toEqual({
      pagesDiscovered: 4,
      pagesIndexed: 1,
      pagesSkipped: 1,
      pagesFailed: 1,
    });
    expect(queued.map((p) => p.pageKey)).toEqual([(await w.page("/")).pageKey]);
  });

  it("notes each nudge as progress", async () => {
    const w = await world();
    const before = await w.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await w.store.records.nudge(before);
    const once = await w.now();
    expect(once.nudges).toBe(1);
    expect(once.updatedAt > before.updatedAt).toBe(true);
    await w.store.records.nudge(once);
    expect((await w.now()).nudges).toBe(2);
  });

  it("lists pages by status, a page at a time", async () => {
    const w = await world();
    await w.store.frontier.discover(w.crawl, [
      ...found("/a", "/b", "/c"),
      { url: `${ORIGIN}/x`, depth: 1, skip: { reason: "filter", message: "out" } },
    ]);
    const first = await w.store.frontier.listPages(w.crawl, ["queued"], 2, undefined);
    const rest = await w.store.frontier.listPages(
      w.crawl,
      ["queued"],
      2,
      first.nextCursor ?? undefined,
    );
    expect([...first.items, ...rest.items].map((p) => p.status)).toEqual(Array(4).fill("queued"));
    const skipped = await w.store.frontier.listPages(w.crawl, ["skipped"], 10, undefined);
    expect(skipped.items.map((p) => p.url)).toEqual([`${ORIGIN}/x`]);
    const either = await w.store.frontier.listPages(w.crawl, ["skipped", "queued"], 10, undefined);
    expect(either.items.map((p) => p.status).sort()).toEqual([
      ...Array(4).fill("queued"),
      "skipped",
    ]);
    const page = await w.store.frontier.getPage(WS, w.crawl.crawlId, (await w.page("/a")).pageKey);
    expect(page?.url).toBe(`${ORIGIN}/a`);
  });
});

describe("the crawl's helper items", () => {
  type Stamped = Item & { expiresAt?: number };
  /** Every item of the crawl under `kind` (CRAWL, CRAWLPAGE, CRAWLHASH, CRAWLPATH, CRAWLHOST). */
  const itemsOf = (w: World, kind: string) =>
    aws.table.all<Stamped>(wsKey(WS), `${kind}#${w.crawl.crawlId}`);
  /** A crawl that claimed a content hash, counted query variants and paced a host. */
  async function busyWorld(): Promise<World> {
    const w = await world();
    await w.store.frontier.discover(w.crawl, found("/a", "/events?month=1", "/events?month=2"));
    await w.store.contents.claim(await w.page("/a"), "hash1");
    await w.store.pace.claimSlot(w.crawl, "site.example", 100, Date.now(), 1e9);
    await w.store.pace.observe(w.crawl, "paced.example", { latencyMs: 10 }, 100);
    return w;
  }

  it("expire CRAWL_HELPER_DAYS after they are written; the crawl and its pages never do", async () => {
    const before = Math.floor(Date.now() / 1000);
    const w = await busyWorld();
    const after = Math.floor(Date.now() / 1000);
    const days = CRAWL_HELPER_DAYS * 86_400;
    expect(CRAWL_HELPER_DAYS).toBeGreaterThanOrEqual(4);
    for (const kind of ["CRAWLHASH", "CRAWLPATH", "CRAWLHOST"]) {
      const items = await itemsOf(w, kind);
      expect(items.length, kind).toBeGreaterThan(0);
      for (const item of items) {
        expect(item.expiresAt, item.sk).toBeGreaterThanOrEqual(before + days);
        expect(item.expiresAt, item.sk).toBeLessThanOrEqual(after + days);
      }
    }
    expect((await itemsOf(w, "CRAWLHOST")).map((i) => i.sk.split("#").pop()).sort()).toEqual([
      "paced.example",
      "site.example",
    ]);
    const kept = [...(await itemsOf(w, "CRAWL")), ...(await itemsOf(w, "CRAWLPAGE"))];
    expect(kept.filter((i) => i.sk.startsWith("CRAWLPAGE#"))).toHaveLength(4);
    expect(kept.filter((i) => "expiresAt" in i).map((i) => i.sk)).toEqual([]);
  });

  it("are stamped again by each later write of a pace or a variant count", async () => {
    const w = await busyWorld();
    const stale = Math.floor(Date.now() / 1000);
    for (const kind of ["CRAWLPATH", "CRAWLHOST"]) {
      for (const item of await itemsOf(w, kind)) {
        await aws.table.update(item.pk, item.sk, { expiresAt: stale });
      }
    }
    await w.store.frontier.discover(w.crawl, found("/events?month=3"));
    await w.store.pace.claimSlot(w.crawl, "site.example", 100, Date.now(), 1e9);
    await w.store.pace.observe(w.crawl, "paced.example", { latencyMs: 10 }, 100);
    for (const kind of ["CRAWLPATH", "CRAWLHOST"]) {
      for (const item of await itemsOf(w, kind)) {
        expect(item.expiresAt, item.sk).toBeGreaterThan(stale + 86_400);
      }
    }
  });

  it("expire at once when the crawl has ended; its record and pages stay", async () => {
    const w = await busyWorld();
    await w.store.records.end(w.crawl, "completed", null);
    const before = Math.floor(Date.now() / 1000);
    await Promise.all([
      w.store.contents.expire(w.crawl),
      w.store.frontier.expireVariants(w.crawl),
      w.store.pace.expire(w.crawl),
    ]);
    for (const kind of ["CRAWLHASH", "CRAWLPATH", "CRAWLHOST"]) {
      const items = await itemsOf(w, kind);
      expect(items.length, kind).toBeGreaterThan(0);
      for (const item of items) expect(item.expiresAt, item.sk).toBeLessThanOrEqual(before + 1);
    }
    const kept = [...(await itemsOf(w, "CRAWL")), ...(await itemsOf(w, "CRAWLPAGE"))];
    expect(kept.filter((i) => "expiresAt" in i).map((i) => i.sk)).toEqual([]);
  });
});

describe("the page quota", () => {
  const quotas = () =>
    new Quotas(aws.table, {
      crawl_pages: 1000,
      upload_bytes: 1,
      model_calls: 1,
      competitor_checks: 1,
      exports: 1,
      reindexes: 1,
    });
  const used = async (charge: QuotaCharge) =>
    (
      await aws.table.get<{ pk: string; sk: string; used: number }>(
        wsKey(WS),
        `QUOTA#${charge.day}#${charge.kind}`,
      )
    )?.used;

  it("gives back, once, the pages no slot used when the crawl ends", async () => {
    const charge = await quotas().consume(WS, "crawl_pages", 10);
    const w = await world(10, charge);
    for (const page of ["p1", "p2", "p3"]) await w.store.records.takeSlot(w.crawl, page);
    const before = (await used(charge)) ?? 0;
    await Promise.all([w.crawls.cancel(WS, w.crawl.crawlId), w.crawls.cancel(WS, w.crawl.crawlId)]);
    expect(await used(charge)).toBe(before - 7);
    await w.store.records.end(w.crawl, "failed", "late");
    expect(await used(charge)).toBe(before - 7);
  });

  it("gives back the whole charge of a crawl that took no slot", async () => {
    const charge = await quotas().consume(WS, "crawl_pages", 4);
    const w = await world(4, charge);
    const before = (await used(charge)) ?? 0;
    await w.store.records.end(w.crawl, "failed", "host does not resolve");
    expect(await used(charge)).toBe(before - 4);
  });
});
