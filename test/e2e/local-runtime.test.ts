import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAI } from "../support/fake-openai.js";
import {
  type LocalProcess,
  startLocalProcess,
  stopLocalProcess,
} from "../support/local-process.js";
import { shared } from "../support/shared.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/**
 * The local runtime as a user starts it (`npm start`'s command), spoken to over HTTP, stopped and
 * started again on the same data directory.
 */

const API_KEY = "e2e-test-key-0123456789abcdef";

const start = (dataDir: string) =>
  startLocalProcess(dataDir, {
    API_KEY,
    POWERTOOLS_LOG_LEVEL: "INFO",
    // The fixture site is on loopback, and the model is the fake one.
    ALLOW_PRIVATE_URLS: "true",
    CRAWL_POLITENESS_MS: "0",
    OPENAI_API_KEY: "fake-key",
    OPENAI_BASE_URL: model.baseURL,
    EMBEDDING_MODEL: "fake-embedding",
  });

let dataDir: string;
let server: LocalProcess;
let site: Site;
let model: FakeOpenAI;

const call = (path: string, init: RequestInit & { json?: unknown } = {}) => {
  const { json, ...rest } = init;
  return fetch(`${server.url}${path}`, {
    ...rest,
    headers: {
      authorization: `Bearer ${API_KEY}`,
      ...(json !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
  });
};

interface Source {
  id: string;
  status: string;
  enabled: number;
  chunk_count: number;
  indexed_at: string | null;
}

async function waitFor(id: string, status: string): Promise<Source> {
  // By the clock, not a count of polls: on a loaded machine each poll itself is slow.
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const source = (await (await call(`/api/knowledge/${id}`)).json()) as Source;
    if (source.status === status) return source;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${id} never became ${status}`);
}

const search = async (query: string) =>
  (
    (await (await call("/api/knowledge/search", { method: "POST", json: { query } })).json()) as {
      results: Array<{ source_id: string; text: string }>;
    }
  ).results;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "kb-e2e-"));
  model = await FakeOpenAI.start();
  site = await startSite({
    "/": respond(
      htmlPage(
        "Acme",
        `<h1>Acme analytics</h1>${prose("Acme overview")}<a href="/pricing">Pricing</a> <a href="/about">About</a>`,
      ),
    ),
    "/pricing": respond(
      htmlPage(
        "Pricing",
        `<h1>Pricing</h1><p>The Scale plan costs $249 per month.</p>${prose("Pricing")}`,
      ),
    ),
    "/about": respond(htmlPage("About", `<h1>About us</h1>${prose("About Acme")}`)),
  });
  server = await start(dataDir);
}, 60_000);
afterAll(async () => {
  await stopLocalProcess(server);
  await Promise.all([site.close(), model.close()]);
});

/** Three text sources, added and indexed by the first test that needs them: their answers. */
const textSources = shared(async () => {
  const texts = {
    pricing: "# Pricing\nThe Growth plan costs $99 per month and includes unlimited seats.",
    team: "# Team\nOur marketing team of twelve works from Lisbon and Berlin.",
    launch: "# Launch\nThe spring launch targets mid-market SaaS companies in Europe.",
  };
  const added: Record<string, { status: number; body: { id: string; status: string } }> = {};
  for (const [name, text] of Object.entries(texts)) {
    const res = await call("/api/knowledge", { method: "POST", json: { text, name } });
    added[name] = {
      status: res.status,
      body: (await res.json()) as { id: string; status: string },
    };
  }
  const ids = Object.fromEntries(Object.entries(added).map(([name, { body }]) => [name, body.id]));
  const indexed = await Promise.all(Object.values(ids).map((id) => waitFor(id, "indexed")));
  return { added, ids, indexed };
});

/** The fixture site's pricing page, added by URL and indexed by the first test that needs it. */
const urlSource = shared(async () => {
  const res = await call("/api/knowledge", {
    method: "POST",
    json: { url: `${site.origin}/pricing` },
  });
  const { id } = (await res.json()) as { id: string };
  return waitFor(id, "indexed");
});

describe("the local runtime, end to end", () => {
  it("adds text sources and indexes them", async () => {
    const { added, indexed } = await textSources();
    for (const { status, body } of Object.values(added)) {
      expect(status).toBe(200);
      expect(body).toEqual({ id: expect.stringMatching(/^kb_/), status: "indexing" });
    }
    for (const source of indexed) {
      expect(source.chunk_count).toBeGreaterThan(0);
      expect(source.indexed_at).not.toBeNull();
    }
  });

  it("searches, and a disabled source leaves results until enabled again", async () => {
    const { ids } = await textSources();
    expect((await search("growth plan price"))[0]?.source_id).toBe(ids.pricing);
    const patched = await call(`/api/knowledge/${ids.pricing}`, {
      method: "PATCH",
      json: { enabled: false },
    });
    expect(((await patched.json()) as Source).enabled).toBe(0);
    expect((await search("growth plan price")).map((r) => r.source_id)).not.toContain(ids.pricing);
    await call(`/api/knowledge/${ids.pricing}`, { method: "PATCH", json: { enabled: true } });
    expect((await search("growth plan price"))[0]?.source_id).toBe(ids.pricing);
  });

  it("reindexes and deletes; a second delete is a 404", async () => {
    const { ids } = await textSources();
    const reindexed = await call(`/api/knowledge/${ids.team}/reindex`, { method: "POST" });
    expect(await reindexed.json()).toEqual({ id: ids.team, status: "indexing" });
    await waitFor(ids.team as string, "indexed");

    expect((await call(`/api/knowledge/${ids.launch}`, { method: "DELETE" })).status).toBe(204);
    expect((await call(`/api/knowledge/${ids.launch}`, { method: "DELETE" })).status).toBe(404);
    expect((await search("spring launch")).map((r) => r.source_id)).not.toContain(ids.launch);
  });

  it("indexes a web page added by URL", async () => {
    const source = await urlSource();
    const { id } = source;
    expect(source).toMatchObject({ type: "url", source_url_or_path: `${site.origin}/pricing` });
    expect((await search("Scale plan 249"))[0]?.source_id).toBe(id);
  });

  it("crawls a site into one source per page", async () => {
    await urlSource();
    const res = await call("/api/knowledge/crawl", {
      method: "POST",
      json: { seedUrl: `${site.origin}/`, maxPages: 10 },
    });
    const { crawlId } = (await res.json()) as { crawlId: string };
    let crawl: { status: string; pagesIndexed: number } = { status: "indexing", pagesIndexed: 0 };
    for (let i = 0; i < 200 && crawl.status === "indexing"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      crawl = (await (await call(`/api/knowledge/crawl/${crawlId}`)).json()) as typeof crawl;
    }
    expect(crawl).toMatchObject({ status: "completed", pagesIndexed: 3 });
    const sources = (await (await call("/api/knowledge?type=url&limit=100")).json()) as {
      sources: Array<{ id: string; crawl_id: string | null; source_url_or_path: string }>;
    };
    // One source per page: /pricing, added by URL above, was refreshed in place (it keeps being
    // the source it was), and the crawl added the other two.
    const urls = sources.sources.map((s) => s.source_url_or_path);
    expect(urls.sort()).toEqual([...new Set(urls)].sort());
    expect(urls.filter((url) => url.startsWith(site.origin))).toHaveLength(3);
    const pages = sources.sources.filter((s) => s.crawl_id === crawlId);
    expect(pages).toHaveLength(2);
    // A crawl counts a page once its source is created; the source's own indexing follows.
    for (const page of pages) await waitFor(page.id, "indexed");
  }, 60_000);

  it("answers chat grounded in the knowledge base, with citations", async () => {
    await textSources();
    const brand = await call("/api/brand", {
      method: "PUT",
      json: { name: "Acme", description: "Analytics for marketing teams" },
    });
    expect(brand.status).toBe(200);
    model.fallback("chat", { text: "The Growth plan costs $99 per month [1]." });
    const res = await call("/api/chat", {
      method: "POST",
      json: { message: "What does Growth cost?" },
    });
    const answer = (await res.json()) as {
      answer: string;
      citations: Array<{ source_id: string }>;
    };
    expect(answer.answer).toContain("$99");
    expect(answer.citations.length).toBeGreaterThan(0);
    expect(model.prompt()).toContain("Analytics for marketing teams");
  });

  it("logs each request as one readable line naming its function and request id", async () => {
    const listed = await call("/api/knowledge?limit=1");
    model.fallback("chat", { text: "The Growth plan costs $99 per month [1]." });
    const chatted = await call("/api/chat", {
      method: "POST",
      json: { message: "What does Growth cost?" },
    });
    await chatted.text();
    const ids = [listed, chatted].map((res) => res.headers.get("x-request-id") ?? "");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const lines = server.output().split("\n");
    const about = (id: string) => lines.filter((line) => line.includes(id));
    const time = "\\d\\d:\\d\\d:\\d\\d";
    expect(about(ids[0] ?? "")).toEqual([
      expect.stringMatching(
        new RegExp(`^${time} GET /api/knowledge 200 \\d+ms knowledge-api req=${ids[0]}$`),
      ),
    ]);
    expect(about(ids[1] ?? "")).toEqual([
      expect.stringMatching(
        new RegExp(`^${time} POST /api/chat 200 \\d+ms intel-api req=${ids[1]}$`),
      ),
    ]);
    // Powertools' JSON is for AWS: nothing of it at the terminal, EMF included.
    expect(lines.filter((line) => line.startsWith("{"))).toEqual([]);
  });

  it("keeps everything across a restart on the same data directory", async () => {
    const { ids } = await textSources();
    const listed = async () =>
      ((await (await call("/api/knowledge?limit=100")).json()) as { sources: Source[] }).sources
        .map(({ id, status, enabled, chunk_count }) => ({ id, status, enabled, chunk_count }))
        .sort((a, b) => a.id.localeCompare(b.id));
    const before = await listed();
    expect(before.map((s) => s.id)).toContain(ids.team);
    expect(before.every((s) => s.status === "indexed")).toBe(true);
    await stopLocalProcess(server);
    server = await start(dataDir);
    // What was there, as it was; what was deleted (the launch, when the test above ran) stays so.
    expect(await listed()).toEqual(before);
    expect((await search("marketing team Lisbon"))[0]?.source_id).toBe(ids.team);
  }, 60_000);
});
