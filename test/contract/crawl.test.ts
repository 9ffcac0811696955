import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";
import {
  type Client,
  type OpenApi,
  type Service,
  SLOW_TEST_MS,
  startService,
  until,
} from "./support.js";

/**
 * POST /api/knowledge/crawl as the interface document describes it: a crawl from a seed URL whose
 * pages become knowledge sources, capped by `maxPages`. Its progress is read from
 * GET /api/knowledge/crawl/{crawlId} and its sources from GET /api/knowledge?crawl_id=, which the
 * interface document does not show and /openapi.json does.
 */

interface Source {
  id: string;
  type: string;
  source_url_or_path: string;
  status: string;
}

interface Crawl {
  crawlId: string;
  status: string;
  maxPages: number;
  pagesIndexed: number;
}

const PAGES = ["/", ...Array.from({ length: 9 }, (_, i) => `/guide/${i + 1}`)];

let service: Service;
let api: Client;
let openapi: OpenApi;
let site: Site;
let single: Site;

beforeAll(async () => {
  const links = PAGES.map((path) => `<a href="${path}">${path}</a>`).join(" ");
  site = await startSite(
    Object.fromEntries(
      PAGES.map((path) => [
        path,
        respond(htmlPage(`Guide ${path}`, `<article>${prose(`Guide ${path}`)}</article>${links}`)),
      ]),
    ),
  );
  single = await startSite({
    "/": respond(htmlPage("Only page", `<article>${prose("Only page")}</article>`)),
  });
  // Pacing between requests to one host is the operator's choice; tests turn it off.
  service = await startService({ CRAWL_POLITENESS_MS: "0" });
  api = service.client;
  openapi = service.openapi;
});
afterAll(async () => {
  await service?.close();
  await site?.close();
  await single?.close();
});

async function startCrawl(body: { seedUrl: string; maxPages?: number }) {
  const started = await api.post("/api/knowledge/crawl", body);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  expect(typeof started.body.crawlId).toBe("string");
  expect(started.body.status).toBe("indexing");
  expect(typeof started.body.maxPages).toBe("number");
  return started.body as unknown as Crawl;
}

/** Waits for the crawl to end, then for every source it lists to finish indexing. */
async function finished(crawlId: string): Promise<Crawl> {
  const crawl = await until(
    `crawl ${crawlId} to end`,
    async () => (await api.get<Crawl>(`/api/knowledge/crawl/${crawlId}`)).body,
    (c) => c.status !== "indexing",
  );
  await until(
    `the sources of crawl ${crawlId} to finish indexing`,
    () => sourcesOf(crawlId),
    (sources) => sources.every((s) => s.status !== "indexing"),
  );
  return crawl;
}

async function sourcesOf(crawlId: string): Promise<Source[]> {
  const listed = await api.get<{ sources: Source[] }>(
    `/api/knowledge?crawl_id=${encodeURIComponent(crawlId)}`,
  );
  expect(listed.status).toBe(200);
  return listed.body.sources;
}

let first: Crawl;

describe("POST /api/knowledge/crawl", () => {
  it(
    "starts a crawl (200, crawlId, indexing, maxPages echoed) whose pages become indexed url sources",
    async () => {
      const started = await startCrawl({ seedUrl: `${site.origin}/`, maxPages: 8 });
      expect(started.maxPages).toBe(8);
      first = await finished(started.crawlId);
      expect(first.status).toBe("completed");
      expect(first.pagesIndexed).toBe(8);

      const sources = await sourcesOf(started.crawlId);
      expect(sources).toHaveLength(first.pagesIndexed);
      for (const source of sources) {
        expect(source).toMatchObject({ id: expect.stringMatching(/^kb_/), type: "url" });
        expect(source.status).toBe("indexed");
        expect(PAGES.map((path) => `${site.origin}${path}`)).toContain(source.source_url_or_path);
      }
      // The plain listing of the document has them too.
      const all = (await api.get<{ sources: Source[] }>("/api/knowledge")).body.sources;
      expect(all.map((s) => s.id)).toEqual(expect.arrayContaining(sources.map((s) => s.id)));
    },
    SLOW_TEST_MS,
  );

  it(
    "lists, for a second crawl of the same site, exactly the sources that crawl indexed or refreshed",
    async () => {
      const started = await startCrawl({ seedUrl: `${site.origin}/`, maxPages: 5 });
      expect(started.maxPages).toBe(5);
      const second = await finished(started.crawlId);
      expect(second.status).toBe("completed");
      expect(second.pagesIndexed).toBeGreaterThan(0);

      const sources = await sourcesOf(started.crawlId);
      expect(
        sources.map((s) => s.source_url_or_path),
        `GET /api/knowledge?crawl_id=${started.crawlId} after pagesIndexed ${second.pagesIndexed}`,
      ).toHaveLength(second.pagesIndexed);
      for (const source of sources) {
        expect(PAGES.map((path) => `${site.origin}${path}`)).toContain(source.source_url_or_path);
      }
    },
    SLOW_TEST_MS,
  );

  it(
    "caps a crawl without maxPages at the default /openapi.json documents, and echoes it",
    async () => {
      const documented = (
        openapi.schema("StartCrawl") as { properties: { maxPages: { default?: unknown } } }
      ).properties.maxPages.default;
      expect(typeof documented, "StartCrawl.maxPages has a documented default").toBe("number");
      const started = await startCrawl({ seedUrl: `${single.origin}/` });
      expect(started.maxPages).toBe(documented);
      const crawl = await finished(started.crawlId);
      expect(crawl.maxPages).toBe(documented);
    },
    SLOW_TEST_MS,
  );
});
