import { describe, expect, it } from "vitest";
import type { FetchedResource, Fetcher } from "../../lib/competitors/fetcher.js";
import { CrawlSession, type SessionLimits } from "../../lib/competitors/session.js";

type Answer = Partial<FetchedResource> | Error;

/** A fetcher over a table of answers that records requests and how many overlapped per host. */
function fakeFetcher(answers: Record<string, Answer>) {
  const requested: string[] = [];
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  const fetcher: Fetcher = async (url) => {
    requested.push(url);
    const host = new URL(url).host;
    inFlight.set(host, (inFlight.get(host) ?? 0) + 1);
    maxInFlight.set(host, Math.max(maxInFlight.get(host) ?? 0, inFlight.get(host) ?? 0));
    await new Promise((resolve) => setImmediate(resolve));
    inFlight.set(host, (inFlight.get(host) ?? 1) - 1);
    const answer = answers[url] ?? { status: 404 };
    if (answer instanceof Error) throw answer;
    return { url, status: 200, contentType: "text/html", text: "", ...answer };
  };
  return { fetcher, requested, maxInFlight };
}

const limits = (overrides: Partial<SessionLimits> = {}): SessionLimits => ({
  maxFetches: 10,
  deadline: Date.now() + 60_000,
  politenessMs: 0,
  requestTimeoutMs: 5_000,
  robotsAgent: "kb-intel-bot",
  ...overrides,
});

const robots = (text: string): Answer => ({ contentType: "text/plain", text });

describe("CrawlSession", () => {
  it("never requests what robots.txt disallows for its agent", async () => {
    const fake = fakeFetcher({
      "https://acme.com/robots.txt": robots(
        "User-agent: *\nAllow: /\n\nUser-agent: kb-intel-bot\nDisallow: /pricing\nSitemap: https://acme.com/map.xml",
      ),
      "https://acme.com/": { text: "home" },
    });
    const session = new CrawlSession(fake.fetcher, limits());
    expect(await session.get("https://acme.com/pricing", "html")).toMatchObject({
      ok: false,
      reason: "robots",
    });
    expect(await session.get("https://acme.com/", "html")).toMatchObject({
      ok: true,
      page: { text: "home" },
    });
    expect(await session.sitemaps("https://acme.com")).toEqual(["https://acme.com/map.xml"]);
    expect(fake.requested).toEqual(["https://acme.com/robots.txt", "https://acme.com/"]);
  });

  it("reads a missing robots.txt as allowing everything, and a failing one as allowing nothing", async () => {
    const fake = fakeFetcher({
      "https://open.com/robots.txt": { status: 404 },
      "https://open.com/": {},
      "https://busy.com/robots.txt": { status: 503 },
    });
    const session = new CrawlSession(fake.fetcher, limits());
    expect(await session.get("https://open.com/", "html")).toMatchObject({ ok: true });
    expect(await session.get("https://busy.com/", "html")).toMatchObject({
      ok: false,
      reason: "robots",
    });
    expect(fake.requested).not.toContain("https://busy.com/");
  });

  it("skips robots.txt for public APIs when told to", async () => {
    const fake = fakeFetcher({
      "https://api.example.com/jobs": { contentType: "application/json", text: "[]" },
    });
    const session = new CrawlSession(fake.fetcher, limits());
    expect(
      await session.get("https://api.example.com/jobs", "json", { robots: false }),
    ).toMatchObject({ ok: true });
    expect(fake.requested).toEqual(["https://api.example.com/jobs"]);
  });

  it("reports an unreachable site as a network failure, and an HTTP error by its status", async () => {
    const fake = fakeFetcher({
      "https://down.com/robots.txt": new Error("connection refused"),
      "https://acme.com/robots.txt": { status: 404 },
      "https://acme.com/gone": { status: 410 },
    });
    const session = new CrawlSession(fake.fetcher, limits());
    expect(await session.get("https://down.com/", "html")).toMatchObject({
      ok: false,
      reason: "network",
      message: expect.stringContaining("connection refused"),
    });
    expect(await session.get("https://acme.com/gone", "html")).toMatchObject({
      ok: false,
      reason: "status",
      message: "https://acme.com/gone answered HTTP 410",
    });
  });

  it("stops at its request budget, robots.txt included", async () => {
    const fake = fakeFetcher({
      "https://acme.com/robots.txt": { status: 404 },
      "https://acme.com/a": {},
    });
    const session = new CrawlSession(fake.fetcher, limits({ maxFetches: 2 }));
    expect(await session.get("https://acme.com/a", "html")).toMatchObject({ ok: true });
    expect(await session.get("https://acme.com/b", "html")).toMatchObject({
      ok: false,
      reason: "budget",
    });
    expect(fake.requested).toHaveLength(2);
  });

  it("starts nothing once its deadline has passed", async () => {
    const fake = fakeFetcher({});
    const session = new CrawlSession(fake.fetcher, limits({ deadline: Date.now() - 1 }));
    expect(await session.get("https://acme.com/", "html")).toMatchObject({
      ok: false,
      reason: "budget",
    });
    expect(fake.requested).toEqual([]);
  });

  it("sends one request at a time to a host, while other hosts proceed", async () => {
    const answers: Record<string, Answer> = {};
    for (const host of ["a.com", "b.com"]) {
      answers[`https://${host}/robots.txt`] = { status: 404 };
      for (let i = 0; i < 5; i++) answers[`https://${host}/${i}`] = {};
    }
    const fake = fakeFetcher(answers);
    const session = new CrawlSession(fake.fetcher, limits({ maxFetches: 20 }));
    const urls = Object.keys(answers).filter((url) => !url.endsWith("robots.txt"));
    const outcomes = await Promise.all(urls.map((url) => session.get(url, "html")));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(Object.fromEntries(fake.maxInFlight)).toEqual({ "a.com": 1, "b.com": 1 });
  });
});
