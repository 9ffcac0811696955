import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { HostPace, OverBudget, PoliteSession } from "../../lib/web/session.js";
import { respond, type Site, startSite } from "../support/sites.js";

const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 2000 });
const text = { "content-type": "text/plain" };
/** Timers may fire a millisecond early against Date.now(). */
const CLOCK_SLACK_MS = 2;

/** A site that notes when each request arrived and when its answer was sent. */
async function timedSite(robots: string) {
  const visits: Array<{ path: string; arrived: number; answered: number }> = [];
  const site = await startSite({ "/robots.txt": respond(robots, text) });
  for (const path of ["/a", "/b", "/c", "/d"]) {
    site.route(path, (_req, res) => {
      const arrived = Date.now();
      setTimeout(() => {
        res.writeHead(200, text).end(path);
        visits.push({ path, arrived, answered: Date.now() });
      }, 10);
    });
  }
  return { site, visits };
}

/** The pause between each answer and the next arrival. */
const pauses = (visits: Array<{ arrived: number; answered: number }>) =>
  visits.slice(1).map((visit, i) => visit.arrived - (visits[i]?.answered ?? 0));

describe("PoliteSession", () => {
  let plain: Awaited<ReturnType<typeof timedSite>>;
  let slow: Awaited<ReturnType<typeof timedSite>>;
  let down: Site;

  beforeAll(async () => {
    plain = await timedSite("User-agent: *\nDisallow: /d\n");
    slow = await timedSite("User-agent: kb-intel-bot\nCrawl-delay: 0.15\n");
    down = await startSite({ "/robots.txt": respond("busy", text, 503) });
  });
  afterAll(() => Promise.all([plain.site.close(), slow.site.close(), down.close()]));

  it("reads an origin's robots.txt once, under the one policy", async () => {
    const session = new PoliteSession(fetcher, { politenessMs: 0 });
    const before = plain.site.requests.length;
    const [a, d] = await Promise.all([
      session.rules(`${plain.site.origin}/a`),
      session.rules(`${plain.site.origin}/d`),
    ]);
    expect(a.isAllowed(`${plain.site.origin}/a`)).toBe(true);
    expect(d.isAllowed(`${plain.site.origin}/d`)).toBe(false);
    expect(plain.site.requests.slice(before)).toEqual(["/robots.txt"]);
    expect((await session.rules(down.origin)).unreadable).toMatchObject({ status: 503 });
  });

  it("spaces one host's requests by the politeness, or by a longer Crawl-delay", async () => {
    const session = new PoliteSession(fetcher, { politenessMs: 60 });
    for (const { site, visits } of [plain, slow]) {
      visits.length = 0;
      const rules = await session.rules(site.origin);
      const paths = ["/a", "/b", "/c"];
      await Promise.all(paths.map((path) => session.fetch(`${site.origin}${path}`, {}, rules)));
      expect(visits.map((v) => v.path)).toEqual(paths);
      const gap = session.gapMs(rules);
      for (const pause of pauses(visits))
        expect(pause).toBeGreaterThanOrEqual(gap - CLOCK_SLACK_MS);
    }
    expect(session.gapMs(await session.rules(slow.site.origin))).toBe(150);
  });

  it("keeps one pace per host for every session that shares it, as a crawl and a check would", async () => {
    const pace = new HostPace();
    const crawl = new PoliteSession(fetcher, { politenessMs: 50, pace });
    const check = new PoliteSession(fetcher, { politenessMs: 50, pace });
    plain.visits.length = 0;
    await Promise.all([
      crawl.fetch(`${plain.site.origin}/a`),
      check.fetch(`${plain.site.origin}/b`),
      crawl.fetch(`${plain.site.origin}/c`),
      check.fetch(`${plain.site.origin}/d`),
    ]);
    expect(plain.visits.map((v) => v.path)).toEqual(["/a", "/b", "/c", "/d"]);
    for (const pause of pauses(plain.visits))
      expect(pause).toBeGreaterThanOrEqual(50 - CLOCK_SLACK_MS);
  });

  it("owes a host no pause for a request that never reached it", async () => {
    let resolves = false;
    const flaky = new SafeFetcher({
      allowPrivate: true,
      resolve: async () => (resolves ? [{ address: "127.0.0.1", family: 4 }] : []),
    });
    const session = new PoliteSession(flaky, { politenessMs: 60_000 });
    const url = `http://flaky.test:${plain.site.port}/a`;
    await expect(session.fetch(url)).rejects.toMatchObject({ code: "dns_failure" });
    resolves = true;
    expect((await session.fetch(url)).body.toString()).toBe("/a");
  });

  it("sends nothing its budget refuses, and gives each request what time is left", async () => {
    let refuse = true;
    const asked: number[] = [];
    const session = new PoliteSession(fetcher, {
      politenessMs: 10_000,
      budget: {
        spend(url, waitMs) {
          asked.push(waitMs);
          if (refuse) throw new OverBudget(`no budget for ${url}`);
          return 1;
        },
      },
    });
    const before = plain.site.requests.length;
    await expect(session.fetch(`${plain.site.origin}/a`)).rejects.toThrow(OverBudget);
    expect(plain.site.requests.length).toBe(before);
    refuse = false;
    // Nothing was sent, so nothing is owed to the host: no wait, and 1 ms is too short to answer.
    await expect(session.fetch(`${plain.site.origin}/a`)).rejects.toMatchObject({
      code: "timeout",
    });
    expect(asked).toEqual([0, 0]);
  });
});
