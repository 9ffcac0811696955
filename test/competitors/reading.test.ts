import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { competitorsApi } from "../../lib/competitors/api.js";
import { type PageReader, pageReader } from "../../lib/competitors/reader.js";
import { competitorBlobPrefix, type Snapshot } from "../../lib/competitors/snapshot.js";
import { MemoryBudget } from "../../lib/files/budget.js";
import { Sandbox, THREAD_OVERHEAD_MB } from "../../lib/files/sandbox.js";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import { PAGE_ATTACKS } from "../hardening/attacks.js";
import { roomyQuotas, startAws, type TestAws } from "../support/aws.js";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { respond, type Site, startSite } from "../support/sites.js";
import { servicesFor } from "./world.js";

/**
 * Competitor pages are parsed and read in the sandbox's threads (lib/competitors/reader.ts), not
 * on the thread that serves the API: the homepage of 30,000 links the timed fuzz found (650 KB,
 * a second or two of parsing) no longer stalls other clients, and a page beyond its deadline or
 * heap limit fails on its own.
 */

const WS = "ws_reading";
/** The fuzz's page: 30,000 links below the homepage, which discovery resolves and sorts out. */
const MANY_LINKS = PAGE_ATTACKS["many-links"].build(30_000);

/** Stands in for API-key auth: every request is the test workspace's. */
const testAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("workspaceId", WS);
  await next();
};

/** The longest the main thread went without running a 10 ms timer while `work` ran. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 10);
  try {
    return { value: await work(), stallMs };
  } finally {
    clearInterval(ticker);
  }
}

/** A reader in a sandbox of its own, with room for one thread of `maxHeapMb`. */
const boundedReader = (timeoutMs: number, maxHeapMb: number) =>
  pageReader(
    { timeoutMs, maxHeapMb },
    new Sandbox(new MemoryBudget(maxHeapMb + THREAD_OVERHEAD_MB)),
  );

let aws: TestAws;
/** A competitor whose homepage is the fuzz's page. */
let linked: Site;
/** An ordinary competitor: pricing, careers (with a job board), blog, feed and sitemap. */
let fixture: CompetitorSite;

beforeAll(async () => {
  [aws, linked, fixture] = await Promise.all([
    startAws(),
    startSite({ "/": respond(MANY_LINKS), "/robots.txt": respond("", {}, 404) }),
    startCompetitorSite(),
  ]);
});
afterAll(() => Promise.all([aws.close(), linked.close(), fixture.close()]));

/** Checks `homepage` as a competitor of a workspace of its own, reading pages with `reader`. */
async function check(workspaceId: string, homepage: string, reader?: PageReader) {
  const services = servicesFor(aws, fixture, reader ? { reader } : {});
  const { id } = await services.competitors.create(workspaceId, homepage);
  return services.checker.check(workspaceId, id);
}

describe("checking a homepage of 30,000 links", () => {
  it("through the API, while the main thread keeps running its timers", async () => {
    const services = servicesFor(aws, fixture);
    const app = createServiceApp({
      authenticate: testAuth,
      modules: [
        competitorsApi({
          ...services,
          checksQueue: aws.queue("checks"),
          quotas: roomyQuotas(aws.table),
          allowPrivate: true,
        }),
      ],
    });
    const { id } = await services.competitors.create(WS, `${linked.origin}/`);
    const { value: res, stallMs } = await longestStall(async () =>
      app.request(`/api/intel/competitors/${id}/check`, { method: "POST" }),
    );
    expect(res.status).toBe(200);
    const { result } = (await res.json()) as { result: { ok: boolean; summary: string } };
    expect(result.ok).toBe(true);
    expect(result.summary).toMatch(/^Baseline recorded for 127\.0\.0\.1:\d+: the homepage's/);
    // Parsed on this thread, the page held it for 1 to 2 seconds.
    expect(stallMs).toBeLessThan(150);
    const [key] = await aws.blobs.list(competitorBlobPrefix(WS, id));
    const snapshot = JSON.parse((await aws.blobs.getText(key ?? "")) ?? "{}") as Snapshot;
    expect(snapshot.facts.messaging).toEqual({
      url: `${linked.origin}/`,
      headline: "Links",
      claims: [],
    });
  });

  it("fails the check, saying why, when the page needs more memory than a page may use", async () => {
    const result = await check("ws_heap", `${linked.origin}/`, boundedReader(20_000, 16));
    expect(result).toMatchObject({ ok: false, changed: false });
    expect(result.summary).toMatch(
      /could not be checked: http:\/\/127\.0\.0\.1:\d+\/: Reading the page needed more than 16 MB of memory$/,
    );
  });

  it("fails the check, saying why, when reading the page outlasts its deadline", async () => {
    const result = await check("ws_deadline", `${linked.origin}/`, boundedReader(300, 128));
    expect(result).toMatchObject({ ok: false, changed: false });
    expect(result.summary).toMatch(
      /could not be checked: http:\/\/127\.0\.0\.1:\d+\/: Reading the page took longer than 0\.3 seconds$/,
    );
  });
});

describe("a page too big to read besides the homepage", () => {
  it("leaves its own section out, and the rest of the site is read", async () => {
    const features = Array.from({ length: 30_000 }, (_, i) => `Feature ${i}`);
    const { plans } = fixture.state;
    fixture.state.plans = plans.map((plan) => ({ ...plan, features }));
    try {
      const result = await check("ws_pricing", fixture.origin, boundedReader(20_000, 16));
      expect(result).toMatchObject({ ok: true, changed: false });
      expect(result.summary).toMatch(
        /^Baseline recorded for 127\.0\.0\.1:\d+: 3 job postings, 2 posts and the homepage's headline\..* No pricing page found\.$/,
      );
    } finally {
      fixture.state.plans = plans;
    }
  });
});
