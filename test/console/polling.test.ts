import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Page, Route } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import {
  type LocalProcess,
  startLocalProcess,
  stopLocalProcess,
} from "../support/local-process.js";

/**
 * The console's background polling, in Chromium against the local runtime, on Playwright's clock:
 * a minute of polling is simulated, not waited, so the counts do not depend on the machine. The
 * source list is answered by the test (a source that stays `indexing` whatever happens), and the
 * page counts its own calls to the API.
 */

const API_KEY = "console-poll-key-0123456789abcdef";
/** The console's polling interval, and the slack a count over a minute may have beyond it. */
const INTERVAL_MS = 1500;
const SLACK = 3;
const PER_MINUTE = 60_000 / INTERVAL_MS + SLACK;
const START = Date.parse("2025-06-02T09:00:00Z");
/** Simulated time passes in steps this long, each followed by the page's requests settling. */
const STEP_MS = 100;
/**
 * The step of a run in which no call may come (a hidden tab, another screen, a Retry-After): any
 * call the page makes is counted all the same, and the run takes a tenth of the round trips.
 */
const QUIET_STEP_MS = 1000;

const STUCK = {
  id: "kb_stuck0000000000000000",
  type: "text",
  name: "Stuck source",
  source_url_or_path: null,
  status: "indexing",
  chunk_count: 0,
  enabled: true,
  created_at: "2025-01-01T00:00:00.000Z",
  indexed_at: null,
  last_error: null,
  error_code: null,
  crawl_id: null,
};

let dataDir: string;
let server: LocalProcess;
let browser: Browser;
let context: BrowserContext | undefined;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "kb-console-poll-"));
  [server, browser] = await Promise.all([
    startLocalProcess(dataDir, { API_KEY, POWERTOOLS_LOG_LEVEL: "WARN" }),
    launchBrowser(),
  ]);
}, 60_000);

afterEach(async () => {
  await context?.close();
  context = undefined;
});

afterAll(async () => {
  await browser?.close();
  if (server) await stopLocalProcess(server);
  await rm(dataDir, { recursive: true, force: true });
});

interface Counters {
  /** Calls to the API (fetch) so far. */
  calls: number;
  /** Resolves once every call made so far has its whole answer (not timed: the clock is fake). */
  settled: () => Promise<void>;
}

declare global {
  interface Window {
    pollCounters: Counters;
  }
}

/** Is this the console's request for the list of sources (not one source, not a crawl)? */
const isSourceList = (route: Route) => {
  const url = new URL(route.request().url());
  return route.request().method() === "GET" && url.pathname.endsWith("/api/knowledge");
};

/**
 * A signed-in console on the knowledge screen, on a paused clock, whose list of sources is
 * answered by `answer` (a stuck indexing source by default).
 */
async function openConsole(
  answer: (route: Route) => Promise<void> = (route) => route.fulfill({ json: listOf(STUCK) }),
): Promise<Page> {
  context = await browser.newContext();
  const page = await context.newPage();
  await page.addInitScript((key) => {
    sessionStorage.setItem("kbi.apiKey", key);
    const inFlight = new Set<Promise<unknown>>();
    const counters = {
      calls: 0,
      settled: async () => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
      },
    };
    window.pollCounters = counters;
    const realFetch = window.fetch.bind(window);
    window.fetch = (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (!url.includes("/api/")) return realFetch(input, init);
      counters.calls += 1;
      const call = realFetch(input, init);
      // Done once the body has arrived too (the console reads it next).
      const done = call.then((r) => r.clone().arrayBuffer());
      inFlight.add(done);
      void done.catch(() => undefined).finally(() => inFlight.delete(done));
      return call;
    };
  }, API_KEY);
  await page.route(
    (url) => url.pathname.endsWith("/api/knowledge"),
    (route) => (isSourceList(route) ? answer(route) : route.fallback()),
  );
  // The clock stands still unless the test runs it.
  await page.clock.install({ time: START });
  await page.clock.pauseAt(START + 1000);
  await page.goto(`${server.url}/#/knowledge`);
  await page.locator("li.source").first().waitFor();
  await settle(page);
  return page;
}

const listOf = (...sources: Array<typeof STUCK>) => ({ sources, nextCursor: null });

/** Waits until the page has no call to the API in flight, nor one its answers start. */
async function settle(page: Page): Promise<void> {
  for (let round = 0; round < 2; round++) await page.evaluate(() => window.pollCounters.settled());
}

const calls = async (page: Page) => (await page.evaluate(() => window.pollCounters)).calls;

/**
 * Runs the page's clock for `ms` in steps of `step`, letting each step's requests finish before
 * the next; answers the calls made meanwhile. Stops early past `limit` calls (a runaway poller).
 */
async function run(page: Page, ms: number, step = STEP_MS, limit = 1000): Promise<number> {
  const before = await calls(page);
  for (let elapsed = 0; elapsed < ms; elapsed += step) {
    await page.clock.runFor(step);
    await settle(page);
    if ((await calls(page)) - before > limit) break;
  }
  return (await calls(page)) - before;
}

/** Makes the tab hidden or visible, as switching tabs or minimising the window does. */
async function setVisibility(page: Page, state: "hidden" | "visible"): Promise<void> {
  await page.evaluate((value) => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => value });
    Object.defineProperty(document, "hidden", {
      configurable: true,
      get: () => value === "hidden",
    });
    document.dispatchEvent(new Event("visibilitychange"));
  }, state);
}

const go = (page: Page, screen: string) =>
  page.getByRole("link", { name: screen, exact: true }).click();

describe("the console's polling, on a simulated clock", () => {
  it("calls the API once per interval over a minute while a source stays indexing", async () => {
    const page = await openConsole();
    const count = await run(page, 60_000);
    process.stdout.write(`console polling: ${count} calls in a simulated minute\n`);
    expect(count).toBeLessThanOrEqual(PER_MINUTE);
    // It does keep polling: the source is still indexing.
    expect(count).toBeGreaterThanOrEqual(20);
  }, 120_000);

  it("keeps one loop through failed requests, re-renders and leaving the screen", async () => {
    let answered = 0;
    const page = await openConsole((route) => {
      answered += 1;
      // Every fourth answer fails: the poller backs off, and must not start a second loop.
      return answered % 4 === 0
        ? route.fulfill({ status: 500, json: { error: { code: "internal", message: "boom" } } })
        : route.fulfill({ json: listOf(STUCK) });
    });
    const before = await calls(page);
    let polls = 0;
    for (let round = 0; round < 4; round++) {
      polls += await run(page, 10_000);
      // Away and back: showing the screen again loads the list once, and adds no loop.
      await go(page, "Search and chat");
      const away = await run(page, 5_000, QUIET_STEP_MS);
      expect(away).toBe(0);
      await go(page, "Knowledge");
      await page.locator("li.source").first().waitFor();
      await settle(page);
    }
    polls += await run(page, 20_000);
    const count = (await calls(page)) - before;
    process.stdout.write(
      `console polling with failures and navigation: ${count} calls (${polls} polls) in a simulated minute on the screen\n`,
    );
    // A minute on the screen, and four returns to it (one load each).
    expect(count).toBeLessThanOrEqual(PER_MINUTE + 4);
    expect(polls).toBeLessThanOrEqual(PER_MINUTE);
  }, 120_000);

  it("backs off on errors: fewer calls each time the API keeps failing", async () => {
    const page = await openConsole();
    await page.unroute((url) => url.pathname.endsWith("/api/knowledge"));
    await page.route(
      (url) => url.pathname.endsWith("/api/knowledge"),
      (route) =>
        isSourceList(route)
          ? route.fulfill({ status: 503, json: { error: { code: "unavailable", message: "x" } } })
          : route.fallback(),
    );
    const count = await run(page, 60_000);
    process.stdout.write(`console polling against a failing API: ${count} calls in a minute\n`);
    // Doubling from the interval, up to its cap: 3 + 6 + 12 + 24 s … within a minute.
    expect(count).toBeLessThanOrEqual(6);
    expect(count).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it("waits the Retry-After of a 429 before its next call", async () => {
    let limited = false;
    const page = await openConsole((route) => {
      if (!limited) return route.fulfill({ json: listOf(STUCK) });
      limited = false;
      return route.fulfill({
        status: 429,
        headers: { "retry-after": "20" },
        json: { error: { code: "rate_limited", message: "Too many requests" } },
      });
    });
    limited = true;
    // The next poll gets the 429; then nothing for 20 s.
    expect(await run(page, INTERVAL_MS)).toBe(1);
    expect(limited).toBe(false);
    expect(await run(page, 19_000, QUIET_STEP_MS)).toBe(0);
    // Then it polls again, at its interval.
    expect(await run(page, 1_500)).toBe(1);
    expect(await run(page, 15_000)).toBeLessThanOrEqual(15_000 / INTERVAL_MS + 1);
  }, 120_000);

  it("makes no call while the tab is hidden, and resumes when it is shown", async () => {
    const page = await openConsole();
    await setVisibility(page, "hidden");
    const hidden = await run(page, 60_000, QUIET_STEP_MS);
    process.stdout.write(`console polling in a hidden tab: ${hidden} calls in a minute\n`);
    expect(hidden).toBe(0);
    await setVisibility(page, "visible");
    const shown = await run(page, 3 * INTERVAL_MS);
    expect(shown).toBeGreaterThanOrEqual(1);
    expect(shown).toBeLessThanOrEqual(3);
  }, 120_000);
});

describe("a browser upload that fails", () => {
  it("leaves no source awaiting its file, and says so", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    await page.addInitScript((key) => sessionStorage.setItem("kbi.apiKey", key), API_KEY);
    // The bucket refuses the file (the presigned POST goes to the storage emulator's origin).
    const api = new URL(server.url).origin;
    await page.route(
      (url) => url.origin !== api,
      (route) =>
        route.request().method() === "POST"
          ? route.fulfill({
              status: 403,
              contentType: "application/xml",
              body: "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
            })
          : route.fallback(),
    );
    await page.goto(`${server.url}/#/knowledge`);
    await page.getByRole("heading", { name: "Knowledge", exact: true }).waitFor();
    const files = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(["# Notes\nSome notes."], "notes.md", { type: "text/markdown" }));
      return transfer;
    });
    await page.dispatchEvent(".drop", "drop", { dataTransfer: files });
    const upload = page.locator(".uploads li").filter({ hasText: "notes.md" });
    await expect.poll(() => upload.innerText(), { timeout: 15_000 }).toContain("Failed");
    const alert = page.getByRole("alert").first();
    await expect
      .poll(() => alert.innerText(), { timeout: 15_000 })
      .toContain("Request has expired");
    expect(await alert.locator("details").textContent()).toContain("AccessDenied (HTTP 403)");
    expect(await alert.innerText()).toContain("notes.md was not added");

    const res = await fetch(`${server.url}/api/knowledge?limit=100`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    const { sources } = (await res.json()) as { sources: Array<{ name: string; status: string }> };
    expect(sources.filter((s) => s.status === "awaiting_upload")).toEqual([]);
    expect(await page.locator("li.source").filter({ hasText: "notes.md" }).count()).toBe(0);
  });
});
