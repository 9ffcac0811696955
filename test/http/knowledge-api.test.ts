import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { createServiceApp } from "../../lib/http/app.js";
import { newId } from "../../lib/ids.js";
import {
  type ContentLoader,
  type Indexer,
  textLoader,
} from "../../lib/knowledge/indexing/indexer.js";
import type { SearchResult } from "../../lib/knowledge/retrieval/retrieval.js";
import type { SourceItem, Sources, SourceType } from "../../lib/knowledge/sources/sources.js";
import { MAX_QUERY_LENGTH } from "../../lib/search/index.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { sourcesApp } from "../support/app.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

let rt: TestRuntime;
let sourceId: string;

beforeAll(async () => {
  rt = await startTestRuntime();
  const res = await rt.call("/api/knowledge", {
    method: "POST",
    json: { text: "Hello pricing world" },
  });
  sourceId = ((await res.json()) as { id: string }).id;
});
afterAll(() => rt.close());

/** Every knowledge route, with a valid body where it takes one. */
const routes = (id: string): Array<[string, string, unknown?]> => [
  ["POST", "/api/knowledge", { text: "x" }],
  ["GET", "/api/knowledge"],
  ["GET", `/api/knowledge/${id}`],
  ["PATCH", `/api/knowledge/${id}`, { enabled: false }],
  ["POST", `/api/knowledge/${id}/reindex`],
  ["DELETE", `/api/knowledge/${id}`],
  ["POST", "/api/knowledge/search", { query: "pricing" }],
];

const UNAUTHORIZED = {
  error: {
    code: "unauthorized",
    message: "A valid API key is required: Authorization: Bearer <key>",
  },
};

describe("auth", () => {
  it("answers the same 401 to missing, empty, malformed, unknown and misplaced keys on every route", async () => {
    const revoked = await rt.runtime.keys.createKey(rt.runtime.workspaceId, "to revoke");
    await rt.runtime.keys.revokeKey(revoked.info.keyId);
    const attempts: Array<{ headers?: Record<string, string>; query?: string }> = [
      {},
      { headers: { authorization: "" } },
      { headers: { authorization: "Bearer " } },
      { headers: { authorization: `Basic ${rt.key}` } },
      { headers: { authorization: `Bearer ${rt.key} extra` } },
      { headers: { authorization: "Bearer kbi_unknownunknownunknownunknown" } },
      { headers: { authorization: `Bearer ${revoked.key}` } },
      { headers: { "x-api-key": rt.key } },
      { query: `?api_key=${rt.key}` },
    ];
    for (const [method, path, body] of routes(sourceId)) {
      for (const { headers, query = "" } of attempts) {
        const res = await rt.call(`${path}${query}`, {
          method,
          key: null,
          ...(headers ? { headers } : {}),
          ...(body ? { json: body } : {}),
        });
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}${query}`).toBe(401);
        expect(await res.json()).toEqual(UNAUTHORIZED);
      }
    }
  });
});

describe("tenancy", () => {
  it("answers 404 for another workspace's source on every route that takes an id", async () => {
    for (const [method, path, body] of routes(sourceId).filter(([, p]) => p.includes(sourceId))) {
      const res = await rt.call(path, {
        method,
        key: rt.otherKey,
        ...(body ? { json: body } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
    }
    const mine = await rt.call(`/api/knowledge/${sourceId}`);
    expect(((await mine.json()) as { enabled: number }).enabled).toBe(1);
  });

  it("keeps lists and search to the caller's workspace", async () => {
    await rt.runtime.queues.idle();
    const list = (await (await rt.call("/api/knowledge", { key: rt.otherKey })).json()) as {
      sources: unknown[];
    };
    expect(list.sources).toEqual([]);
    const search = await rt.call("/api/knowledge/search", {
      method: "POST",
      key: rt.otherKey,
      json: { query: "pricing" },
    });
    expect(await search.json()).toEqual({ results: [] });
  });
});

describe("bad input", () => {
  const post = (body: string, type = "application/json") =>
    rt.call("/api/knowledge", { method: "POST", headers: { "content-type": type }, body });

  it.each([
    ["malformed JSON", '{"text":', "invalid_json"],
    ["a JSON array", "[1,2]", "validation_failed"],
    ["a wrong type", '{"text":5}', "validation_failed"],
    ["an unknown field", '{"text":"a","color":"red"}', "validation_failed"],
    ["both url and text", '{"text":"a","url":"https://example.com"}', "validation_failed"],
    ["neither url nor text", '{"name":"nothing"}', "validation_failed"],
    ["empty text", '{"text":""}', "validation_failed"],
    ["whitespace-only text", '{"text":" \\n\\t "}', "validation_failed"],
  ])("answers 400 to %s", async (_, body, code) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code } });
  });

  it("answers 400 to a search query over the documented length", async () => {
    const search = (query: string) =>
      rt.call("/api/knowledge/search", { method: "POST", json: { query } });
    const over = await search("a".repeat(MAX_QUERY_LENGTH + 1));
    expect(over.status).toBe(400);
    expect(await over.json()).toMatchObject({ error: { code: "validation_failed" } });
    expect((await search("a".repeat(MAX_QUERY_LENGTH))).status).toBe(200);
  });

  it("says why a body with both url and text is refused", async () => {
    const res = await post('{"text":"a","url":"https://example.com"}');
    const body = (await res.json()) as {
      error: { details: { issues: Array<{ path: string; message: string }> } };
    };
    expect(body.error.details.issues).toEqual([
      { path: "text", message: "Give either `text` or `url`, not both" },
      { path: "url", message: "Give either `text` or `url`, not both" },
    ]);
  });

  it("answers 413 to text over the documented limit and to bodies over the body limit", async () => {
    const overText = await post(JSON.stringify({ text: "a".repeat(1_000_001) }));
    expect(overText.status).toBe(413);
    expect(await overText.json()).toMatchObject({
      error: { code: "payload_too_large", details: { limit: 1_000_000 } },
    });
    const overBody = await post(JSON.stringify({ text: "a".repeat(3 * 1024 * 1024) }));
    expect(overBody.status).toBe(413);
    expect(await overBody.json()).toMatchObject({ error: { code: "payload_too_large" } });
  });

  it("answers 415 to a body that is not JSON", async () => {
    const res = await post("text=hello", "application/x-www-form-urlencoded");
    expect(res.status).toBe(415);
  });

  it("answers 400 to bad list parameters and bad cursors", async () => {
    for (const query of [
      "limit=0",
      "limit=101",
      "limit=abc",
      "enabled=maybe",
      "status=done",
      "cursor=%%%",
      "crawlId=crawl_x",
      "bogus=1",
    ]) {
      const res = await rt.call(`/api/knowledge?${query}`);
      expect(res.status, query).toBe(400);
    }
  });

  it("answers 404 to ids of the wrong shape or prefix", async () => {
    for (const id of [
      "crawl_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
      "kb_nope",
      "kb_01JD3Q8Y5V2N6W3KX9T7M4PZ8R",
    ]) {
      const res = await rt.call(`/api/knowledge/${id}`);
      expect(res.status, id).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
    }
  });

  it("answers 404 to unknown routes and 405 with Allow to unknown methods", async () => {
    const unknown = await rt.call("/api/nothing-here");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: "not_found" } });
    const wrongMethod = await rt.call(`/api/knowledge/${sourceId}`, { method: "PUT", json: {} });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("DELETE, GET, PATCH");
    expect(await wrongMethod.json()).toMatchObject({ error: { code: "method_not_allowed" } });
  });

  it("enables and disables with true/false or 1/0, as `enabled` reads", async () => {
    const patch = async (enabled: unknown) => {
      const res = await rt.call(`/api/knowledge/${sourceId}`, {
        method: "PATCH",
        json: { enabled },
      });
      expect(res.status, JSON.stringify(enabled)).toBe(200);
      return ((await res.json()) as { enabled: number }).enabled;
    };
    expect(await patch(0)).toBe(0);
    expect(await patch(1)).toBe(1);
    expect(await patch(false)).toBe(0);
    expect(await patch(true)).toBe(1);
    for (const enabled of [2, -1, 0.5, "1", "true", null]) {
      const res = await rt.call(`/api/knowledge/${sourceId}`, {
        method: "PATCH",
        json: { enabled },
      });
      expect(res.status, JSON.stringify(enabled)).toBe(400);
      expect(await res.json()).toMatchObject({
        error: { code: "validation_failed", details: { issues: [{ path: "enabled" }] } },
      });
    }
  });

  it("answers 400 to a patch without a known field of the right shape", async () => {
    for (const body of [
      {},
      { enabled: "yes" },
      { enabled: true, title: "x" },
      { name: "" },
      { name: "x".repeat(201) },
      { refresh: "hourly" },
    ]) {
      const res = await rt.call(`/api/knowledge/${sourceId}`, { method: "PATCH", json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    // A well-formed schedule on a text source: the request is valid, the source's type refuses it.
    const res = await rt.call(`/api/knowledge/${sourceId}`, {
      method: "PATCH",
      json: { refresh: "daily" },
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("conflict");
  });

  it("refuses URLs it can judge without fetching: other schemes, credentials, private addresses", async () => {
    for (const url of [
      "file:///etc/passwd",
      "ftp://example.com/x",
      "https://user:pass@example.com/",
      "http://127.0.0.1/",
      "http://2130706433/",
      "http://0x7f.0.0.1/",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]/",
      "http://10.0.0.5/",
      "not a url",
    ]) {
      const res = await rt.call("/api/knowledge", { method: "POST", json: { url } });
      expect(res.status, url).toBe(400);
      expect(await res.json()).toMatchObject({
        error: { code: "validation_failed", details: { issues: [{ path: "url" }] } },
      });
    }
  });
});

describe("sources stay manageable", () => {
  it("renames a source, and search answers with the new name at once", async () => {
    const created = await rt.call("/api/knowledge", {
      method: "POST",
      json: { text: "# Onboarding\n\nOnboarding takes a zebrafish week.", name: "Old name" },
    });
    const { id } = (await created.json()) as { id: string };
    await rt.runtime.queues.idle();
    const renamed = await rt.call(`/api/knowledge/${id}`, {
      method: "PATCH",
      json: { name: "  New name " },
    });
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ id, name: "New name", enabled: 1 });
    const search = await rt.call("/api/knowledge/search", {
      method: "POST",
      json: { query: "zebrafish" },
    });
    const { results } = (await search.json()) as { results: SearchResult[] };
    expect(results.find((r) => r.source_id === id)?.name).toBe("New name");
  });

  it("lists crawls at /api/knowledge/crawl (not as a source id) and filters sources by crawl", async () => {
    const crawls = await rt.call("/api/knowledge/crawl?limit=5");
    expect(crawls.status).toBe(200);
    expect(await crawls.json()).toEqual({ crawls: [], nextCursor: null });
    const bad = await rt.call("/api/knowledge/crawl?status=done");
    expect(bad.status).toBe(400);
    const none = await rt.call("/api/knowledge?crawl_id=crawl_01JD3Q8Y5V2N6W3KX9T7M4PZ8R");
    expect(await none.json()).toEqual({ sources: [], nextCursor: null });
  });
});

describe("list filters", () => {
  it("take one value or several, repeated or comma-separated, and keep any of them", async () => {
    const ws = await rt.runtime.keys.createWorkspace("Filters");
    const { key } = await rt.runtime.keys.createKey(ws.id);
    const add = async (json: object) =>
      (
        (await (await rt.call("/api/knowledge", { method: "POST", key, json })).json()) as {
          id: string;
        }
      ).id;
    const text = await add({ text: "# Filters\n\nA text about list filters." });
    await rt.runtime.queues.idle();
    const failed = await add({ url: "https://no-such-host.invalid/page" });
    await rt.runtime.queues.idle();
    const listed = async (query: string) => {
      const res = await rt.call(`/api/knowledge?${query}`, { key });
      expect(res.status, query).toBe(200);
      return ((await res.json()) as { sources: Array<{ id: string }> }).sources.map((s) => s.id);
    };
    expect(await listed("status=indexed")).toEqual([text]);
    expect(await listed("status=failed")).toEqual([failed]);
    expect(await listed("status=indexed&status=failed")).toEqual([failed, text]);
    expect(await listed("status=failed,indexed")).toEqual([failed, text]);
    expect(await listed("type=text,url&status=indexed")).toEqual([text]);
    expect(await listed("type=file")).toEqual([]);
    const bad = await rt.call("/api/knowledge?status=indexed,done", { key });
    expect(bad.status).toBe(400);
    const { error } = (await bad.json()) as { error: { details: { issues: { path: string }[] } } };
    expect(error.details.issues.map((i) => i.path)).toEqual(["status.1"]);
  });
});

describe("search filters", () => {
  it("narrow the deployed search to the sources named, and to none for an empty list", async () => {
    await rt.runtime.queues.idle();
    const other = await rt.call("/api/knowledge", {
      method: "POST",
      json: { text: "More about pricing, pricing and pricing." },
    });
    const otherId = ((await other.json()) as { id: string }).id;
    await rt.runtime.queues.idle();
    const search = async (filters: Record<string, unknown>) => {
      const res = await rt.call("/api/knowledge/search", {
        method: "POST",
        json: { query: "pricing", ...filters },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { results: SearchResult[] }).results.map((r) => r.source_id);
    };
    expect((await search({})).sort()).toEqual([sourceId, otherId].sort());
    expect(await search({ source_ids: [sourceId] })).toEqual([sourceId]);
    expect(await search({ source_ids: [otherId], limit: 1 })).toEqual([otherId]);
    expect(await search({ source_ids: [] })).toEqual([]);
    expect((await search({ type: ["text"] })).sort()).toEqual([sourceId, otherId].sort());
    expect(await search({ type: ["url", "file"] })).toEqual([]);
    expect(await search({ crawl_id: ["crawl_none"] })).toEqual([]);
    // One value or several: a single value is a list of one.
    expect(await search({ source_ids: sourceId })).toEqual([sourceId]);
    expect((await search({ type: "text" })).sort()).toEqual([sourceId, otherId].sort());
    expect(await search({ type: "url" })).toEqual([]);
    expect(await search({ crawl_id: "crawl_none" })).toEqual([]);
    await rt.call(`/api/knowledge/${otherId}`, { method: "DELETE" });
  });

  it("answers 400 to filters of the wrong shape", async () => {
    for (const filters of [
      { type: ["pdf"] },
      { type: "pdf" },
      { source_ids: 1 },
      { source_ids: [1] },
      { crawl_id: [null] },
      { crawl_id: { id: "crawl_x" } },
      { source_ids: Array.from({ length: 101 }, (_, i) => `kb_${i}`) },
    ]) {
      const res = await rt.call("/api/knowledge/search", {
        method: "POST",
        json: { query: "pricing", ...filters },
      });
      expect(res.status, JSON.stringify(filters)).toBe(400);
      const field = Object.keys(filters)[0] ?? "";
      const { error } = (await res.json()) as {
        error: { code: string; details: { issues: Array<{ path: string }> } };
      };
      expect(error.code).toBe("validation_failed");
      expect(error.details.issues.map((i) => i.path.split(".")[0])).toContain(field);
    }
  });

  /**
   * Sources of every type, pages of two crawls, and more text sources that match the query far
   * better than any of them: more than a search takes from the engine for a small limit, so a
   * filter applied after the engine's top-k cut would find nothing.
   */
  describe("inside the engine, before its top-k cut", () => {
    const WS = "ws_01JD0000000000000000000061";
    const STRONG = 15;
    const WEAK = (topic: string) =>
      `Our handbook covers ${topic}, travel, expenses, holidays, equipment, security reviews and, in one line, pricing.`;
    const texts = new Map<string, string>();
    const loader: ContentLoader = async (source) => ({ text: texts.get(source.id) ?? "" });
    let aws: TestAws;
    let sources: Sources;
    let indexer: Indexer;
    let app: ReturnType<typeof createServiceApp>;
    let file: SourceItem;
    let pageA: SourceItem;
    let pageB: SourceItem;
    const crawlA = newId("crawl");
    const crawlB = newId("crawl");

    async function indexQueued(sourceId: string): Promise<void> {
      const message = aws.queues
        .pending("index")
        .map((body) => JSON.parse(body) as IndexMessage)
        .findLast((queued) => queued.sourceId === sourceId);
      if (!message) throw new Error(`No index message for ${sourceId}`);
      expect(await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 })).toBe(
        "indexed",
      );
    }

    async function added(
      type: SourceType,
      name: string,
      text: string,
      crawlId: string | null = null,
    ): Promise<SourceItem> {
      const source = await sources.create(WS, {
        type,
        name,
        source_url_or_path: type === "url" ? `https://example.com/${name}` : `${name}.md`,
        crawl_id: crawlId,
      });
      texts.set(source.id, text);
      await indexQueued(source.id);
      if (crawlId) {
        // The crawl's report names the page's source, as the crawler records an indexed page.
        await aws.table.put({
          pk: `WS#${WS}`,
          sk: `CRAWLPAGE#${crawlId}#${source.id}`,
          status: "indexed",
          sourceId: source.id,
        });
      }
      return source;
    }

    const search = async (body: Record<string, unknown>) => {
      const res = await app.request("/api/knowledge/search", {
        method: "POST",
        headers: { authorization: `Bearer ${WS}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "pricing", ...body }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { results: SearchResult[] }).results;
    };
    const ids = (results: SearchResult[]) => results.map((r) => r.source_id);

    beforeAll(async () => {
      aws = await startAws();
      sources = sourcesOn(aws);
      indexer = indexerOn(aws, { text: textLoader(aws.blobs), url: loader, file: loader });
      app = sourcesApp(aws, sources, retrieverOn(aws));
      for (let i = 0; i < STRONG; i++) {
        const res = await app.request("/api/knowledge", {
          method: "POST",
          headers: { authorization: `Bearer ${WS}`, "content-type": "application/json" },
          body: JSON.stringify({ text: `Pricing ${i}: pricing, pricing and more pricing.` }),
        });
        expect(res.status).toBe(200);
        await indexQueued(((await res.json()) as { id: string }).id);
      }
      file = await added("file", "guide", WEAK("onboarding"));
      pageA = await added("url", "page-a", WEAK("hiring"), crawlA);
      pageB = await added("url", "page-b", `${WEAK("payroll")} Pricing again.`, crawlB);
    }, 60_000);
    afterAll(() => aws.close());

    it("rank every filtered source below the strong matches when unfiltered", async () => {
      const all = ids(await search({ limit: 50 }));
      expect(all).toHaveLength(STRONG + 3);
      const firstFiltered = Math.min(...[file, pageA, pageB].map((s) => all.indexOf(s.id)));
      expect(firstFiltered).toBe(STRONG);
      expect(await search({ limit: 1 })).toEqual([
        expect.objectContaining({ name: expect.stringMatching(/^Pricing \d+/) }),
      ]);
    });

    it("find a filtered source with limit 1 by source_ids, type and crawl_id", async () => {
      expect(ids(await search({ limit: 1, source_ids: [pageA.id] }))).toEqual([pageA.id]);
      expect(ids(await search({ limit: 1, source_ids: [file.id, pageA.id] }))).toHaveLength(1);
      expect(ids(await search({ limit: 5, source_ids: [file.id, pageA.id] })).sort()).toEqual(
        [file.id, pageA.id].sort(),
      );
      expect(ids(await search({ limit: 1, type: ["file"] }))).toEqual([file.id]);
      // pageB says pricing twice: the better of the two pages.
      expect(ids(await search({ limit: 1, type: ["url"] }))).toEqual([pageB.id]);
      expect(ids(await search({ limit: 1, crawl_id: [crawlA] }))).toEqual([pageA.id]);
      expect(ids(await search({ limit: 5, crawl_id: [crawlA, crawlB] })).sort()).toEqual(
        [pageA.id, pageB.id].sort(),
      );
      expect(ids(await search({ limit: 5, type: ["url", "file"] })).sort()).toEqual(
        [file.id, pageA.id, pageB.id].sort(),
      );
    });

    it("combine as an intersection, and an empty source_ids list matches nothing", async () => {
      expect(ids(await search({ limit: 5, type: ["url"], crawl_id: [crawlB] }))).toEqual([
        pageB.id,
      ]);
      expect(await search({ limit: 5, source_ids: [file.id], type: ["url"] })).toEqual([]);
      expect(await search({ limit: 5, source_ids: [pageA.id], crawl_id: [crawlB] })).toEqual([]);
      expect(await search({ limit: 5, source_ids: [] })).toEqual([]);
      expect(await search({ limit: 5, source_ids: [], type: ["file"] })).toEqual([]);
      expect(await search({ limit: 5, source_ids: ["kb_unknown"] })).toEqual([]);
    });

    it("still hide a disabled source that the filter names", async () => {
      await sources.setEnabled(WS, file.id, false);
      expect(await search({ limit: 1, source_ids: [file.id] })).toEqual([]);
      expect(await search({ limit: 1, type: ["file"] })).toEqual([]);
      await sources.setEnabled(WS, file.id, true);
      expect(ids(await search({ limit: 1, type: ["file"] }))).toEqual([file.id]);
    });
  });
});

describe("the API reference", () => {
  it("serves an OpenAPI 3.1 document generated from the route schemas, and a docs page", async () => {
    const doc = (await (await rt.call("/openapi.json", { key: null })).json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/api/knowledge", "/api/knowledge/{id}", "/api/knowledge/search"]),
    );
    expect(doc.paths["/api/knowledge/{id}"]).toHaveProperty("patch");
    const page = await rt.call("/docs", { key: null });
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("openapi.json");
  });
});
