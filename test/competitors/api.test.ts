import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Competitor } from "../../lib/competitors/competitors.js";
import type { CompetitorEvent, EventDraft } from "../../lib/competitors/events.js";
import { competitorsRoutes } from "../../lib/competitors/routes.js";
import { competitorBlobPrefix } from "../../lib/competitors/snapshot.js";
import { DomainError, type ErrorBody } from "../../lib/errors.js";
import { type AppEnv, createServiceApp } from "../../lib/http/app.js";
import { Queue } from "../../lib/store/queue.js";
import { roomyQuotas } from "../support/aws.js";
import { startWorld, type World } from "./world.js";

interface CompetitorList {
  competitors: Competitor[];
  nextCursor: string | null;
}

interface EventList {
  events: CompetitorEvent[];
  nextCursor: string | null;
}

interface CheckAnswer {
  result: { ok: boolean; changed: boolean; summary: string };
}

/** Stands in for API-key auth: the workspace comes from a header. */
const testAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  const workspaceId = c.req.header("x-test-workspace");
  if (!workspaceId) throw new DomainError("unauthorized", "No workspace");
  c.set("workspaceId", workspaceId);
  await next();
};

describe("competitors API", () => {
  let world: World;
  let app: ReturnType<typeof createServiceApp>;
  const apiDeps = () => ({
    ...world.services,
    checksQueue: world.aws.queue("checks"),
    quotas: roomyQuotas(world.aws.table),
  });

  /** One request; `T` is the body expected on success (errors have the one error shape). */
  const call = async <T = Competitor>(
    method: string,
    path: string,
    options: { body?: unknown; workspace?: string } = {},
  ) => {
    const res = await app.request(path, {
      method,
      headers: {
        "x-test-workspace": options.workspace ?? "ws_a",
        "content-type": "application/json",
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    const text = await res.text();
    const body = (text ? JSON.parse(text) : null) as T & Partial<ErrorBody>;
    return { status: res.status, body };
  };
  const add = (domain: string, workspace?: string) =>
    call("POST", "/api/intel/competitors", {
      body: { domain },
      ...(workspace ? { workspace } : {}),
    });
  const domains = (list: CompetitorList) => list.competitors.map((c) => c.domain);

  beforeAll(async () => {
    world = await startWorld();
    app = createServiceApp({
      authenticate: testAuth,
      modules: [
        // The fixture sites are on loopback, as with ALLOW_PRIVATE_URLS=true.
        competitorsRoutes({ ...apiDeps(), allowPrivate: true }),
      ],
    });
  });
  afterAll(() => world.close());

  describe("adding competitors", () => {
    it("answers 201 with the normalised domain as domain and name", async () => {
      const res = await add("  Acme.COM ");
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^comp_[0-9A-Z]{26}$/),
        domain: "acme.com",
        name: "acme.com",
        companyName: null,
        homepage: null,
        createdAt: expect.any(String),
        lastAnalyzedAt: null,
        cadence: "daily",
        render: "auto",
      });
    });

    it.each([
      "acme.com",
      "www.acme.com",
      "https://www.acme.com/pricing?x=1",
      "HTTP://ACME.COM:80/",
      "acme.com.",
    ])("answers 409 for %s, the same normalised domain", async (domain) => {
      const res = await add(domain);
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: "conflict", details: { domain: "acme.com" } });
    });

    it("keeps a URL's scheme and path as the homepage, and a non-default port", async () => {
      const res = await add("http://www.Beta.io:8080/en/home");
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        domain: "beta.io:8080",
        homepage: "http://www.beta.io:8080/en/home",
      });
    });

    it("stores international domains in punycode", async () => {
      expect((await add("Bücher.example")).body).toMatchObject({ domain: "xn--bcher-kva.example" });
    });

    it.each([
      "",
      "not a domain",
      "localhost",
      "-bad.com",
      "ftp://acme.org",
      "http://u:p@acme.org",
      "acme.123",
      "[::1]",
    ])("answers 400 for %j", async (domain) => {
      const res = await add(domain);
      expect(res.status).toBe(400);
      expect(res.body.error?.code).toBe("validation_failed");
    });

    it.each([
      "10.0.0.1",
      "127.1:8080",
      "0x7f.1",
      "2130706433",
      "http://169.254.169.254/latest/meta-data/",
      "https://192.168.1.1/admin",
      "app.localhost",
    ])("refuses %j as URL sources do, unless private URLs are allowed", async (domain) => {
      const strict = createServiceApp({
        authenticate: testAuth,
        modules: [competitorsRoutes({ ...apiDeps(), allowPrivate: false })],
      });
      const res = await strict.request("/api/intel/competitors", {
        method: "POST",
        headers: { "x-test-workspace": "ws_strict", "content-type": "application/json" },
        body: JSON.stringify({ domain }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        error: {
          code: "validation_failed",
          message: expect.stringMatching(/not a public address|local host name/),
          details: { issues: [{ path: "domain" }] },
        },
      });
      expect((await add(domain, `ws_lenient_${domain}`)).status).toBe(201);
    });

    it("answers 400 for a body without a domain", async () => {
      const res = await call("POST", "/api/intel/competitors", { body: { url: "acme.com" } });
      expect(res.status).toBe(400);
    });
  });

  describe("reading and deleting competitors", () => {
    it("lists a workspace's competitors, newest first, and no one else's", async () => {
      await add("other.org", "ws_b");
      const all = await call<CompetitorList>("GET", "/api/intel/competitors");
      expect(all.status).toBe(200);
      expect(domains(all.body)).toEqual(["xn--bcher-kva.example", "beta.io:8080", "acme.com"]);
      expect(all.body.nextCursor).toBeNull();
      const page = await call<CompetitorList>("GET", "/api/intel/competitors?limit=2");
      expect(page.body.competitors).toHaveLength(2);
      const cursor = page.body.nextCursor ?? "";
      const rest = await call<CompetitorList>(
        "GET",
        `/api/intel/competitors?limit=2&cursor=${cursor}`,
      );
      expect(domains(rest.body)).toEqual(["acme.com"]);
    });

    it("answers 404 for another workspace's competitor and for unknown ids", async () => {
      const [mine] = (await call<CompetitorList>("GET", "/api/intel/competitors")).body.competitors;
      const path = `/api/intel/competitors/${mine?.id}`;
      expect((await call("GET", path)).body).toEqual({ ...mine, pages: {}, snapshot: null });
      expect((await call("GET", path, { workspace: "ws_b" })).status).toBe(404);
      expect((await call("DELETE", path, { workspace: "ws_b" })).status).toBe(404);
      expect((await call("GET", "/api/intel/competitors/comp_nope")).status).toBe(404);
    });

    it("deletes a competitor with its snapshots but keeps its events, and frees its domain", async () => {
      const workspace = "ws_del";
      const { id } = (await add(world.site.origin, workspace)).body;
      const checkPath = `/api/intel/competitors/${id}/check`;
      const baseline = await call<CheckAnswer>("POST", checkPath, { workspace });
      expect(baseline.body).toEqual({
        result: { ok: true, changed: false, summary: expect.stringMatching(/^Baseline recorded/) },
      });
      world.site.state.headline = "Something new";
      const checked = await call<CheckAnswer>("POST", checkPath, { workspace });
      expect(checked.body.result).toMatchObject({ ok: true, changed: true });
      expect(await world.aws.blobs.list(competitorBlobPrefix(workspace, id))).not.toEqual([]);

      const path = `/api/intel/competitors/${id}`;
      expect((await call("DELETE", path, { workspace })).status).toBe(204);
      expect((await call("GET", path, { workspace })).status).toBe(404);
      expect(await world.aws.blobs.list(competitorBlobPrefix(workspace, id))).toEqual([]);
      const events = await call<EventList>("GET", `/api/intel/events?competitorId=${id}`, {
        workspace,
      });
      expect(events.body.events).toMatchObject([{ competitorId: id, type: "messaging" }]);
      expect((await add(world.site.origin, workspace)).status).toBe(201);
    });

    it("shows what monitoring knows: the latest snapshot, each page's last sighting, the site's own name", async () => {
      const workspace = "ws_state";
      const { id } = (await add(world.site.origin, workspace)).body;
      await call<CheckAnswer>("POST", `/api/intel/competitors/${id}/check`, { workspace });
      const first = await call<Record<string, unknown>>("GET", `/api/intel/competitors/${id}`, {
        workspace,
      });
      const checkedAt = (first.body as unknown as Competitor).lastAnalyzedAt;
      expect(first.body).toMatchObject({
        name: new URL(world.site.origin).host,
        companyName: "Acme",
        pages: {
          pricing: { url: `${world.site.origin}/pricing`, lastSeenAt: checkedAt },
          hiring: { url: `${world.site.origin}/careers`, lastSeenAt: checkedAt },
          content: { url: `${world.site.origin}/blog/feed.xml`, lastSeenAt: checkedAt },
          messaging: { url: `${world.site.origin}/`, lastSeenAt: checkedAt },
        },
        snapshot: {
          takenAt: checkedAt,
          headline: world.site.state.headline,
          plans: [
            { name: "Starter", price: 10, currency: "USD", priceText: "$10 per month" },
            { name: "Pro", price: 29, priceText: "$29 per month" },
            { name: "Enterprise", price: null, contactSales: true, priceText: "contact sales" },
          ],
          openRoles: {
            count: 3,
            source: "greenhouse",
            roles: expect.arrayContaining([
              expect.objectContaining({
                title: "Account Executive",
                team: "Sales",
                location: "London",
              }),
            ]),
          },
          posts: {
            count: 2,
            latest: [
              expect.objectContaining({ title: "Faster builds for everyone", date: "2025-02-03" }),
              expect.objectContaining({ title: "Hello world" }),
            ],
          },
        },
      });
      // The listing keeps `name` as the domain and carries the site's name beside it.
      const list = await call<CompetitorList>("GET", "/api/intel/competitors", { workspace });
      expect(list.body.competitors).toMatchObject([{ name: first.body.name, companyName: "Acme" }]);

      // The careers page fails: its last sighting stays, the others move on.
      world.site.failing.add("/careers");
      try {
        await call<CheckAnswer>("POST", `/api/intel/competitors/${id}/check`, { workspace });
      } finally {
        world.site.failing.delete("/careers");
      }
      const second = await call<Record<string, { [k: string]: { lastSeenAt: string } }>>(
        "GET",
        `/api/intel/competitors/${id}`,
        { workspace },
      );
      expect(second.body.pages?.hiring?.lastSeenAt).toBe(checkedAt);
      expect(second.body.pages?.pricing?.lastSeenAt).not.toBe(checkedAt);
    });

    it("answers 404 when checking an unknown competitor", async () => {
      const res = await call(
        "POST",
        "/api/intel/competitors/comp_01JD3Q8Y5V2N6W3KX9T7M4PZ8R/check",
      );
      expect(res.status).toBe(404);
    });
  });

  describe("check-all", () => {
    it("queues one check per competitor of the caller's workspace and answers 202 with the count", async () => {
      const res = await call<{ queued: number }>("POST", "/api/intel/competitors/check-all");
      expect(res).toEqual({ status: 202, body: { queued: 3 } });
      const messages = world.aws.queues
        .pending("checks")
        .map((body) => JSON.parse(body) as unknown);
      const ids = (
        await call<CompetitorList>("GET", "/api/intel/competitors")
      ).body.competitors.map((c) => c.id);
      expect(messages).toEqual(
        expect.arrayContaining(
          ids.map((competitorId) => ({
            kind: "competitor-check",
            workspaceId: "ws_a",
            competitorId,
            requestedAt: expect.any(String),
            // The request's id travels with each message to the worker's log lines.
            correlationId: expect.any(String),
          })),
        ),
      );
      expect(messages).toHaveLength(3);
    });

    it("answers 503 for check-all when the checks queue fails", async () => {
      const working = world.aws.queue("checks");
      const missing = new Queue(working.sqs, working.url.replace(/checks$/, "missing"));
      const broken = createServiceApp({
        authenticate: testAuth,
        modules: [
          competitorsRoutes({
            ...world.services,
            checksQueue: missing,
            quotas: roomyQuotas(world.aws.table),
            allowPrivate: true,
          }),
        ],
      });
      const res = await broken.request("/api/intel/competitors/check-all", {
        method: "POST",
        headers: { "x-test-workspace": "ws_a" },
      });
      expect(res.status).toBe(503);
      expect(((await res.json()) as ErrorBody).error.code).toBe("service_unavailable");
    });
  });

  describe("events", () => {
    const workspace = "ws_events";
    const draft = (i: number): EventDraft => ({
      competitorId: i % 2 === 0 ? "comp_EVEN" : "comp_ODD",
      competitorDomain: "acme.com",
      type: (["pricing", "hiring", "content"] as const)[i % 3] ?? "pricing",
      severity: (["low", "medium", "high", "critical"] as const)[i % 4] ?? "low",
      title: `Event ${i}`,
      aiBrief: `Brief ${i}`,
      details: {
        change: "plan_added",
        subject: `Plan ${i}`,
        before: null,
        after: { i },
        url: null,
      },
    });
    const list = (query = "") => call<EventList>("GET", `/api/intel/events${query}`, { workspace });
    const titles = (res: { body: EventList }) => res.body.events.map((e) => e.title);
    const patch = (id: string, body: unknown, as = workspace) =>
      call<CompetitorEvent>("PATCH", `/api/intel/events/${id}`, { body, workspace: as });

    beforeAll(async () => {
      for (let i = 0; i < 120; i++) {
        const detectedAt = new Date(Date.UTC(2025, 0, 1, 0, i)).toISOString();
        await world.services.events.record(workspace, [draft(i)], detectedAt);
      }
    });

    it("lists 20 events by default, newest first, with every field", async () => {
      const res = await list();
      expect(res.status).toBe(200);
      expect(titles(res)).toHaveLength(20);
      expect(titles(res).slice(0, 3)).toEqual(["Event 119", "Event 118", "Event 117"]);
      expect(Object.keys(res.body.events[0] ?? {}).sort()).toEqual([
        "aiBrief",
        "alert",
        "alertRules",
        "change",
        "competitorDomain",
        "competitorId",
        "details",
        "detectedAt",
        "id",
        "isActioned",
        "isRead",
        "screenshots",
        "severity",
        "title",
        "type",
      ]);
      expect(res.body.events[0]?.id).toMatch(/^evt_/);
      expect(res.body.nextCursor).toEqual(expect.any(String));
    });

    it("pages with limit and cursor up to 100, and refuses a larger limit", async () => {
      const first = await list("?limit=100");
      expect(titles(first)).toHaveLength(100);
      const second = await list(`?limit=100&cursor=${first.body.nextCursor}`);
      expect(titles(second)).toHaveLength(20);
      expect(titles(second)[0]).toBe("Event 19");
      expect(second.body.nextCursor).toBeNull();
      const tooMany = await list("?limit=101");
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.error?.code).toBe("validation_failed");
      expect((await list("?cursor=garbage")).body.error?.code).toBe("invalid_cursor");
    });

    it("filters by severity, competitor, type and read state, alone and together", async () => {
      const high = await list("?severity=high&limit=100");
      expect(titles(high)).toHaveLength(30);
      expect(new Set(high.body.events.map((e) => e.severity))).toEqual(new Set(["high"]));
      expect(titles(await list("?competitorId=comp_ODD&limit=100"))).toHaveLength(60);
      // hiring is i % 3 === 1 and critical is i % 4 === 3: i = 7, 19, 31, ... 115
      const hiringCritical = titles(await list("?type=hiring&severity=critical&limit=100"));
      expect(hiringCritical).toHaveLength(10);
      expect(hiringCritical.at(-1)).toBe("Event 7");
      expect((await list("?severity=urgent")).status).toBe(400);
      expect((await list("?type=rumours")).status).toBe(400);
      expect(titles(await list("?isRead=true"))).toEqual([]);
    });

    it("marks events read and actioned with PATCH", async () => {
      const [event] = (await list("?limit=1")).body.events;
      const id = event?.id ?? "";
      const read = await patch(id, { isRead: true });
      expect(read.status).toBe(200);
      expect(read.body).toEqual({ ...event, isRead: true });
      expect((await patch(id, { isActioned: true, isRead: false })).body).toMatchObject({
        isRead: false,
        isActioned: true,
      });
      await patch(id, { isRead: true });
      expect((await list("?isRead=true")).body.events.map((e) => e.id)).toEqual([id]);
      expect(titles(await list("?isRead=false&limit=100"))).toHaveLength(100);
    });

    it("filters by actioned state as by read state, with severity, in full pages", async () => {
      // Event 119 (critical) is read and actioned above; action the high ones of the newest 60.
      const newest = (await list("?limit=60")).body.events;
      const highs = newest.filter((e) => e.severity === "high");
      expect(highs).toHaveLength(15);
      for (const e of highs) expect((await patch(e.id, { isActioned: true })).status).toBe(200);
      const highTitles = highs.map((e) => e.title);

      expect(titles(await list("?isActioned=true&limit=100"))).toEqual([
        "Event 119",
        ...highTitles,
      ]);
      expect(titles(await list("?isActioned=1&severity=high&limit=100"))).toEqual(highTitles);
      expect(titles(await list("?isActioned=false&severity=high&limit=100"))).toHaveLength(15);
      expect(titles(await list("?isActioned=0&limit=100"))).toHaveLength(100);
      expect(titles(await list("?isActioned=true&isRead=true"))).toEqual(["Event 119"]);
      expect(titles(await list("?isActioned=1&isRead=0&limit=100"))).toEqual(highTitles);

      // The filter applies before the page is cut: pages of 4, all full but the last.
      const paged: string[][] = [];
      let cursor: string | null = null;
      do {
        const res: { status: number; body: EventList } = await list(
          `?isActioned=true&limit=4${cursor ? `&cursor=${cursor}` : ""}`,
        );
        paged.push(titles(res));
        cursor = res.body.nextCursor;
      } while (cursor);
      expect(paged.map((p) => p.length)).toEqual([4, 4, 4, 4]);
      expect(paged.flat()).toEqual(["Event 119", ...highTitles]);

      for (const query of ["?isActioned=yes", "?isActioned=", "?isActioned=true&isActioned=0"]) {
        const res = await list(query);
        expect(res.status, query).toBe(400);
        expect(res.body.error?.details, query).toMatchObject({ issues: [{ path: "isActioned" }] });
      }
    });

    it("takes one value or several for each list filter: repeated, or separated by commas", async () => {
      const both = titles(await list("?severity=high&severity=critical&limit=100"));
      expect(both).toHaveLength(60);
      expect(titles(await list("?severity=high,critical&limit=100"))).toEqual(both);
      expect(titles(await list("?severity=critical,high&limit=100"))).toEqual(both);
      const allOfThem = await list("?competitorId=comp_ODD&competitorId=comp_EVEN&limit=100");
      expect(titles(allOfThem)).toHaveLength(100);
      expect(allOfThem.body.nextCursor).toEqual(expect.any(String));
      // pricing or content (i % 3 !== 1) and low (i % 4 === 0): i = 0, 8, 12, 20, ... 116
      const pricingOrContentLow = titles(
        await list("?type=pricing,content&severity=low&limit=100"),
      );
      expect(pricingOrContentLow).toHaveLength(20);
      expect(pricingOrContentLow.at(-1)).toBe("Event 0");

      // Pages stay full with several values too.
      const paged: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: { status: number; body: EventList } = await list(
          `?severity=high&severity=critical&limit=7${cursor ? `&cursor=${cursor}` : ""}`,
        );
        if (res.body.nextCursor) expect(titles(res)).toHaveLength(7);
        paged.push(...titles(res));
        cursor = res.body.nextCursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(9);
      expect(paged).toEqual(both);

      const bad = await list("?severity=high,urgent");
      expect(bad.status).toBe(400);
      expect(bad.body.error?.details).toMatchObject({ issues: [{ path: "severity.1" }] });
      const tooMany = await list(`?competitorId=${Array.from({ length: 21 }, (_, i) => `c${i}`)}`);
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.error?.details).toMatchObject({ issues: [{ path: "competitorId" }] });
    });

    it("refuses an empty or unknown patch, and another workspace's event", async () => {
      const id = (await list("?limit=1")).body.events[0]?.id ?? "";
      expect((await patch(id, {})).status).toBe(400);
      expect((await patch(id, { seen: true })).status).toBe(400);
      expect((await patch(id, { isRead: true }, "ws_a")).status).toBe(404);
      expect((await patch("evt_nope", { isRead: true })).status).toBe(404);
    });
  });
});
