import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckSession, type SessionLimits } from "../../lib/competitors/session.js";
import { SafeFetcher } from "../../lib/web/fetch.js";
import { HostPace } from "../../lib/web/session.js";
import { type Route, respond, type Site, startSite } from "../support/sites.js";
import { closedPort } from "./world.js";

const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 2000 });
const text = { "content-type": "text/plain" };
const html = (body: string) => respond(body);

const limits = (overrides: Partial<SessionLimits> = {}): SessionLimits => ({
  maxFetches: 10,
  deadline: Date.now() + 60_000,
  politenessMs: 0,
  requestTimeoutMs: 5_000,
  pace: new HostPace(),
  ...overrides,
});

/** A route that answers after a tick, counting how many of the site's requests overlapped. */
function counted(route: Route) {
  let inFlight = 0;
  const counter = { most: 0 };
  const wrapped: Route = async (req, res, url) => {
    inFlight++;
    counter.most = Math.max(counter.most, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 5));
    inFlight--;
    await route(req, res, url);
  };
  return { route: wrapped, counter };
}

describe("CheckSession", () => {
  let acme: Site;
  let missing: Site;
  let busy: Site;

  beforeAll(async () => {
    acme = await startSite({
      "/robots.txt": respond(
        "User-agent: *\nAllow: /\n\nUser-agent: kb-intel-bot\nDisallow: /pricing\nSitemap: https://acme.com/map.xml",
        text,
      ),
      "/": html("home"),
      "/gone": respond("gone", text, 410),
      "/jobs": respond("[]", { "content-type": "application/json" }),
    });
    missing = await startSite({ "/": html("open") });
    busy = await startSite({ "/robots.txt": respond("down", text, 503), "/": html("busy") });
  });
  afterAll(() => Promise.all([acme.close(), missing.close(), busy.close()]));

  it("never requests what robots.txt disallows for its agent", async () => {
    const before = acme.requests.length;
    const session = new CheckSession(fetcher, limits());
    expect(await session.get(`${acme.origin}/pricing`, "html")).toMatchObject({
      ok: false,
      reason: "robots",
    });
    expect(await session.get(`${acme.origin}/`, "html")).toMatchObject({
      ok: true,
      page: { url: `${acme.origin}/`, status: 200, contentType: "text/html", text: "home" },
    });
    expect(await session.sitemaps(acme.origin)).toEqual(["https://acme.com/map.xml"]);
    expect(acme.requests.slice(before)).toEqual(["/robots.txt", "/"]);
  });

  it("reads robots.txt once per check, so the next check sees a new one", async () => {
    const before = acme.requests.length;
    for (const session of [
      new CheckSession(fetcher, limits()),
      new CheckSession(fetcher, limits()),
    ]) {
      await session.get(`${acme.origin}/`, "html");
      await session.get(`${acme.origin}/`, "html");
    }
    expect(acme.requests.slice(before)).toEqual(["/robots.txt", "/", "/", "/robots.txt", "/", "/"]);
  });

  it("reads a missing robots.txt as allowing everything, and a failing one as allowing nothing", async () => {
    const session = new CheckSession(fetcher, limits());
    expect(await session.get(`${missing.origin}/`, "html")).toMatchObject({ ok: true });
    expect(await session.get(`${busy.origin}/`, "html")).toEqual({
      ok: false,
      reason: "robots",
      message: `${busy.origin}/robots.txt answered HTTP 503, so the site is not read for now`,
    });
    expect(busy.requests).not.toContain("/");
  });

  it("skips robots.txt for public APIs when told to", async () => {
    const before = acme.requests.length;
    const session = new CheckSession(fetcher, limits());
    expect(await session.get(`${acme.origin}/jobs`, "json", { robots: false })).toMatchObject({
      ok: true,
      page: { text: "[]" },
    });
    expect(acme.requests.slice(before)).toEqual(["/jobs"]);
  });

  it("reports an unreachable site as a network failure, and an HTTP error by its status", async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    const session = new CheckSession(fetcher, limits());
    expect(await session.get(`${down}/`, "html")).toMatchObject({
      ok: false,
      reason: "network",
      message: expect.stringContaining(`${down}/robots.txt: `),
    });
    expect(await session.get(`${acme.origin}/gone`, "html")).toEqual({
      ok: false,
      reason: "status",
      message: `${acme.origin}/gone answered HTTP 410`,
    });
  });

  it("stops at its request budget, robots.txt included", async () => {
    const before = missing.requests.length;
    const session = new CheckSession(fetcher, limits({ maxFetches: 2 }));
    expect(await session.get(`${missing.origin}/`, "html")).toMatchObject({ ok: true });
    expect(await session.get(`${missing.origin}/b`, "html")).toMatchObject({
      ok: false,
      reason: "budget",
    });
    expect(missing.requests.slice(before)).toEqual(["/robots.txt", "/"]);
  });

  it("starts nothing once its deadline has passed", async () => {
    const before = acme.requests.length;
    const session = new CheckSession(fetcher, limits({ deadline: Date.now() - 1 }));
    expect(await session.get(`${acme.origin}/`, "html")).toEqual({
      ok: false,
      reason: "budget",
      message: `the check's budget ran out before ${acme.origin}/robots.txt`,
    });
    expect(acme.requests.length).toBe(before);
  });

  it("sends one request at a time to a host, while other hosts proceed", async () => {
    const sites = await Promise.all([startSite(), startSite()]);
    try {
      const counters = sites.map((site) => {
        const { route, counter } = counted(html("page"));
        for (let i = 0; i < 5; i++) site.route(`/${i}`, route);
        return counter;
      });
      const session = new CheckSession(fetcher, limits({ maxFetches: 20 }));
      const urls = sites.flatMap((site) => [0, 1, 2, 3, 4].map((i) => `${site.origin}/${i}`));
      const outcomes = await Promise.all(urls.map((url) => session.get(url, "html")));
      expect(outcomes.every((o) => o.ok)).toBe(true);
      expect(counters.map((c) => c.most)).toEqual([1, 1]);
    } finally {
      await Promise.all(sites.map((site) => site.close()));
    }
  });
});
