import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type PageReader, pageReader } from "../../lib/competitors/page-reader.js";
import { competitorsRoutes } from "../../lib/competitors/routes.js";
import { competitorBlobPrefix, type Snapshot } from "../../lib/competitors/snapshot.js";
import { MemoryBudget } from "../../lib/files/budget.js";
import { Sandbox, THREAD_OVERHEAD_MB } from "../../lib/files/sandbox.js";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import { PAGE_ATTACKS } from "../hardening/attacks.js";
import { roomyQuotas, startAws, type TestAws } from "../support/aws.js";
import { type CompetitorSite, startCompetitorSite } from "../support/competitor-site.js";
import { endlessSandbox, NEVER_ENDS } from "../support/endless.js";
import { htmlPage, respond, type Site, startSite } from "../support/sites.js";
import { servicesFor } from "./world.js";

/**
 * Competitor pages are parsed and read in the sandbox's threads (lib/competitors/page-reader.ts), not
 * on the thread that serves the API: the homepage of 30,000 links the timed fuzz found (650 KB,
 * a second or two of parsing) no longer stalls other clients, and a page beyond its deadline or
 * heap limit fails on its own.
 */

/**
 * Every HTML or XML document htmlparser2 parses on this thread, the one that serves the API. The
 * sandbox's threads load their modules themselves, out of this mock's reach: a page read there is
 * not counted, a page read here is, however fast the machine reads it.
 */
const parsedHere = vi.hoisted(() => vi.fn<(parser: string) => void>());
vi.mock("htmlparser2", async (importOriginal) => {
  const real = await importOriginal<typeof import("htmlparser2")>();
  return {
    ...real,
    parseDocument: (...args: Parameters<typeof real.parseDocument>) => {
      parsedHere("parseDocument");
      return real.parseDocument(...args);
    },
    parseFeed: (...args: Parameters<typeof real.parseFeed>) => {
      parsedHere("parseFeed");
      return real.parseFeed(...args);
    },
  };
});

const WS = "ws_reading";
/** The fuzz's page: 30,000 links below the homepage, which discovery resolves and sorts out. */
const MANY_LINKS = PAGE_ATTACKS["many-links"].build(30_000);

/** Stands in for API-key auth: every request is the test workspace's. */
const testAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("workspaceId", WS);
  await next();
};

/**
 * A reader in a sandbox of its own, with room for one thread of `maxHeapMb`; real threads, or
 * threads that never finish a page holding NEVER_ENDS (test/support/endless.ts).
 */
const boundedReader = (
  timeoutMs: number,
  maxHeapMb: number,
  sandboxIn: (budget: MemoryBudget) => Sandbox = (budget) => new Sandbox(budget),
) =>
  pageReader({ timeoutMs, maxHeapMb }, sandboxIn(new MemoryBudget(maxHeapMb + THREAD_OVERHEAD_MB)));

let aws: TestAws;
/** A competitor whose homepage is the fuzz's page. */
let linked: Site;
/** A competitor whose homepage no sandbox thread of endlessSandbox finishes reading. */
let endless: Site;
/** An ordinary competitor: pricing, careers (with a job board), blog, feed and sitemap. */
let fixture: CompetitorSite;

beforeAll(async () => {
  [aws, linked, endless, fixture] = await Promise.all([
    startAws(),
    startSite({ "/": respond(MANY_LINKS), "/robots.txt": respond("", {}, 404) }),
    startSite({
      "/": respond(htmlPage("Endless", `<h1>Endless</h1><p>${NEVER_ENDS}</p>`)),
      "/robots.txt": respond("", {}, 404),
    }),
    startCompetitorSite(),
  ]);
});
afterAll(() => Promise.all([aws.close(), linked.close(), endless.close(), fixture.close()]));

/** Checks `homepage` as a competitor of a workspace of its own, reading pages with `reader`. */
async function check(workspaceId: string, homepage: string, reader?: PageReader) {
  const services = servicesFor(aws, fixture, reader ? { reader } : {});
  const { id } = await services.competitors.create(workspaceId, homepage);
  return services.checker.check(workspaceId, id);
}

describe("checking a homepage of 30,000 links", () => {
  it("through the API, parsing nothing on the thread that serves it", async () => {
    const services = servicesFor(aws, fixture);
    const app = createServiceApp({
      authenticate: testAuth,
      modules: [
        competitorsRoutes({
          ...services,
          checksQueue: aws.queue("checks"),
          quotas: roomyQuotas(aws.table),
          allowPrivate: true,
        }),
      ],
    });
    const { id } = await services.competitors.create(WS, `${linked.origin}/`);
    parsedHere.mockClear();
    const res = await app.request(`/api/intel/competitors/${id}/check`, { method: "POST" });
    expect(res.status).toBe(200);
    const { result } = (await res.json()) as { result: { ok: boolean; summary: string } };
    expect(result.ok).toBe(true);
    expect(result.summary).toMatch(/^Baseline recorded for 127\.0\.0\.1:\d+: the homepage's/);
    // Parsed on this thread, the page held it for 1 to 2 seconds: read, and not here.
    expect(parsedHere).not.toHaveBeenCalled();
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
    // No thread finishes reading this page, on a fast machine or a loaded one: the deadline ends it.
    const reader = boundedReader(300, 128, endlessSandbox);
    const result = await check("ws_deadline", `${endless.origin}/`, reader);
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
