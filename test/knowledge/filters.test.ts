import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { createServiceApp } from "../../lib/http/app.js";
import type { Indexer } from "../../lib/knowledge/indexing/indexer.js";
import { textLoader } from "../../lib/knowledge/indexing/indexer.js";
import {
  type FilterExpression,
  FilterSchema,
  matchesFilter,
} from "../../lib/knowledge/retrieval/filter-expression.js";
import type { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import type { SourceItem, Sources } from "../../lib/knowledge/sources/sources.js";
import type { Delivery, IndexMessage } from "../../lib/store/queue.js";
import { sourcesApp } from "../support/app.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";

/**
 * Metadata on sources and filter expressions over it: every operator on every kind of value and
 * built-in field, their combinations, the 400s that name what is wrong, and the filter applied
 * inside the engine, before its top-k cut.
 */

const source = {
  id: "kb_a",
  type: "url",
  created_at: "2025-03-01T10:00:00.000Z",
  indexed_at: "2025-03-02T10:00:00.000Z",
  crawl_id: "crawl_1",
  holders: new Set(["crawl_1", "crawl_2", "direct"]),
  metadata: { team: "sales", year: 2024, public: true, tags: ["emea", "pricing"], version: "b" },
} as unknown as SourceItem;

const cmp = (type: string, key: string, value: unknown) =>
  ({ type, key, value }) as FilterExpression;

describe("a comparison", () => {
  it.each([
    // strings
    ["eq", "team", "sales", true],
    ["eq", "team", "Sales", false],
    ["ne", "team", "sales", false],
    ["ne", "team", "ops", true],
    ["gt", "version", "a", true],
    ["gte", "version", "b", true],
    ["lt", "version", "b", false],
    ["lte", "version", "b", true],
    ["in", "team", ["ops", "sales"], true],
    ["nin", "team", ["ops", "sales"], false],
    ["nin", "team", ["ops"], true],
    // numbers
    ["eq", "year", 2024, true],
    ["eq", "year", "2024", false],
    ["ne", "year", 2023, true],
    ["gt", "year", 2023, true],
    ["gt", "year", 2024, false],
    ["gte", "year", 2024, true],
    ["lt", "year", 2025, true],
    ["lt", "year", 2024, false],
    ["lte", "year", 2024, true],
    ["lte", "year", 2023, false],
    ["gt", "year", "2023", false],
    ["in", "year", [2023, 2024], true],
    ["nin", "year", [2023, 2024], false],
    // booleans
    ["eq", "public", true, true],
    ["eq", "public", false, false],
    ["ne", "public", false, true],
    // string lists: eq and in match membership
    ["eq", "tags", "emea", true],
    ["eq", "tags", "apac", false],
    ["ne", "tags", "emea", false],
    ["in", "tags", ["apac", "pricing"], true],
    ["nin", "tags", ["apac", "pricing"], false],
    ["nin", "tags", ["apac"], true],
    ["gt", "tags", "a", false],
    // a key the source lacks: only ne and nin match
    ["eq", "region", "eu", false],
    ["ne", "region", "eu", true],
    ["in", "region", ["eu"], false],
    ["nin", "region", ["eu"], true],
    ["gt", "region", 1, false],
    // built-in fields
    ["eq", "type", "url", true],
    ["ne", "type", "url", false],
    ["in", "type", ["text", "file"], false],
    ["nin", "type", ["text", "file"], true],
    ["eq", "source_id", "kb_a", true],
    ["in", "source_id", ["kb_b"], false],
    ["eq", "crawl_id", "crawl_2", true],
    ["eq", "crawl_id", "direct", false],
    ["nin", "crawl_id", ["crawl_9"], true],
    ["gt", "created_at", "2025-02-28T00:00:00Z", true],
    ["gte", "created_at", "2025-03-01T10:00:00.000Z", true],
    ["lt", "created_at", "2025-03-01", false],
    ["lte", "created_at", Date.parse("2025-03-01T10:00:00Z") / 1000, true],
    ["gt", "indexed_at", "2025-03-02T09:59:59Z", true],
    ["lt", "indexed_at", "2025-03-02T09:59:59Z", false],
  ])("%s %s %j matches: %s", (type, key, value, expected) => {
    expect(FilterSchema.safeParse(cmp(type, key, value)).success).toBe(true);
    expect(matchesFilter(cmp(type, key, value), source)).toBe(expected);
  });

  it("on a date field never matches a source without the date (not indexed yet)", () => {
    const fresh = { ...source, indexed_at: null } as SourceItem;
    expect(matchesFilter(cmp("gt", "indexed_at", "2000-01-01"), fresh)).toBe(false);
    expect(matchesFilter(cmp("ne", "indexed_at", "2000-01-01"), fresh)).toBe(true);
  });
});

describe("a compound", () => {
  const yes = cmp("eq", "team", "sales");
  const no = cmp("eq", "team", "ops");
  it.each([
    [{ type: "and", filters: [yes, yes] }, true],
    [{ type: "and", filters: [yes, no] }, false],
    [{ type: "or", filters: [no, yes] }, true],
    [{ type: "or", filters: [no, no] }, false],
    [{ type: "and", filters: [yes, { type: "or", filters: [no, cmp("gt", "year", 2000)] }] }, true],
    [
      { type: "or", filters: [no, { type: "and", filters: [yes, cmp("lt", "year", 2000)] }] },
      false,
    ],
  ])("%j matches: %s", (filter, expected) => {
    expect(FilterSchema.safeParse(filter).success).toBe(true);
    expect(matchesFilter(filter as FilterExpression, source)).toBe(expected);
  });
});

describe("an invalid filter", () => {
  const deep = (levels: number): unknown =>
    levels === 0 ? cmp("eq", "a", 1) : { type: "and", filters: [deep(levels - 1)] };
  it.each([
    [cmp("like", "team", "s"), "type", /Unknown filter type "like"/],
    [cmp("gt", "public", true), "value", /`gt` compares numbers, dates or strings, not a boolean/],
    [cmp("eq", "team", { a: 1 }), "value", /`eq` takes one string, number or boolean/],
    [cmp("in", "team", "sales"), "value", /`in` takes a list/],
    [cmp("in", "team", [true]), "value.0", /`in` takes strings or numbers/],
    [cmp("eq", "type", "pdf"), "value", /`type` is one of/],
    [cmp("eq", "type", 1), "value", /`type` compares with a string/],
    [cmp("gt", "type", "url"), "value", /`gt` does not apply to `type`/],
    [cmp("gt", "created_at", "last week"), "value", /`created_at` compares with a date/],
    [{ type: "and", filters: [] }, "filters", /non-empty list/],
    [{ type: "or", filters: [cmp("eq", "a", 1), 5] }, "filters.1", /an object with a `type`/],
    [{ ...cmp("eq", "a", 1), extra: 1 }, "extra", /Unknown field `extra`/],
    [deep(6), "filters.0.filters.0.filters.0.filters.0.filters.0", /nest at most 5/],
  ])("%j is refused at %s", (filter, path, message) => {
    const parsed = FilterSchema.safeParse(filter);
    expect(parsed.success).toBe(false);
    const issue = parsed.error?.issues[0];
    expect(issue?.path.join(".")).toBe(path);
    expect(issue?.message).toMatch(message);
  });

  it("holding more than 64 comparisons is refused", () => {
    const many = { type: "or", filters: Array.from({ length: 65 }, () => cmp("eq", "a", 1)) };
    expect(FilterSchema.safeParse(many).success).toBe(false);
    expect(FilterSchema.safeParse({ ...many, filters: many.filters.slice(1) }).success).toBe(true);
  });
});

const WS = "ws_01JD0000000000000000000401";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };
describe("filters against the engine", () => {
  let aws: TestAws;
  let sources: Sources;
  let indexer: Indexer;
  let retriever: IndexRetriever;
  let app: ReturnType<typeof createServiceApp>;

  const request = (path: string, body: unknown, method = "POST") =>
    app.request(path, {
      method,
      headers: { authorization: `Bearer ${WS}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  /** Adds a text source through the API and indexes it; answers its id. */
  async function add(text: string, metadata: Record<string, unknown>): Promise<string> {
    const res = await request("/api/knowledge", { text, metadata });
    expect(res.status).toBe(200);
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    expect(await indexer.handle(message, once)).toBe("indexed");
    return ((await res.json()) as { id: string }).id;
  }

  const search = async (body: Record<string, unknown>) => {
    const res = await request("/api/knowledge/search", { query: "pricing", limit: 10, ...body });
    expect(res.status).toBe(200);
    return ((await res.json()) as { results: Array<{ source_id: string }> }).results;
  };

  const STRONG = 30;
  const strong = new Set<string>();
  const weak: string[] = [];

  beforeAll(async () => {
    aws = await startAws();
    sources = sourcesOn(aws);
    indexer = indexerOn(aws, { text: textLoader(aws.blobs) }, { size: 200, overlap: 0 });
    retriever = retrieverOn(aws);
    app = sourcesApp(aws, sources, retriever);
    // Many sources that answer "pricing" far better than the three the filter selects, which
    // hold four weak passages each: a filter applied after a top-10 cut would find none of them.
    for (let i = 0; i < STRONG; i++) {
      strong.add(await add(`Pricing ${i}: pricing, pricing and pricing again.`, { team: "ops" }));
    }
    for (let i = 0; i < 3; i++) {
      const paragraphs = Array.from(
        { length: 4 },
        (_, p) =>
          `Handbook ${i}.${p} covers travel, expenses, holidays, equipment, security reviews, onboarding and, in one line, pricing.`,
      );
      weak.push(await add(paragraphs.join("\n\n"), { team: "sales", year: 2020 + i }));
    }
  }, 120_000);
  afterAll(() => aws.close());

  it("returns a full page of the few matching sources' passages, not what a top-k cut left", async () => {
    const unfiltered = await search({});
    expect(unfiltered).toHaveLength(10);
    expect(unfiltered.every((r) => strong.has(r.source_id))).toBe(true);
    const filtered = await search({ filters: { type: "eq", key: "team", value: "sales" } });
    expect(filtered).toHaveLength(10);
    expect(new Set(filtered.map((r) => r.source_id))).toEqual(new Set(weak));
  });

  it("narrows by ranges and compounds, and together with source_ids", async () => {
    const recent = await search({ filters: { type: "gte", key: "year", value: 2021 } });
    expect(new Set(recent.map((r) => r.source_id))).toEqual(new Set(weak.slice(1)));
    const either = await search({
      filters: {
        type: "or",
        filters: [
          { type: "eq", key: "year", value: 2020 },
          {
            type: "and",
            filters: [
              { type: "eq", key: "team", value: "sales" },
              { type: "lt", key: "year", value: 2022 },
            ],
          },
        ],
      },
    });
    expect(new Set(either.map((r) => r.source_id))).toEqual(new Set(weak.slice(0, 2)));
    const both = await search({
      source_ids: [weak[0], weak[2]],
      filters: { type: "gte", key: "year", value: 2021 },
    });
    expect(new Set(both.map((r) => r.source_id))).toEqual(new Set([weak[2]]));
    // A filter matching most sources leaves out the rest.
    const most = await search({ filters: { type: "ne", key: "source_id", value: [...strong][0] } });
    expect(most).toHaveLength(10);
    expect(most.map((r) => r.source_id)).not.toContain([...strong][0]);
  });

  it("never returns a disabled source, whatever the filter says", async () => {
    const [disabled] = weak;
    await sources.setEnabled(WS, disabled as string, false);
    const results = await search({ filters: { type: "eq", key: "source_id", value: disabled } });
    expect(results).toEqual([]);
    await sources.setEnabled(WS, disabled as string, true);
    expect(
      await search({ filters: { type: "eq", key: "source_id", value: disabled } }),
    ).toHaveLength(4);
  });

  it("follows a PATCH of metadata on the very next search, shown in the source record", async () => {
    const id = weak[2] as string;
    const res = await request(
      `/api/knowledge/${id}`,
      { metadata: { team: "legal", tags: ["x"] } },
      "PATCH",
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { metadata: unknown }).metadata).toEqual({
      team: "legal",
      tags: ["x"],
    });
    const legal = await search({ filters: { type: "eq", key: "tags", value: "x" } });
    expect(new Set(legal.map((r) => r.source_id))).toEqual(new Set([id]));
    expect(
      (await search({ filters: { type: "eq", key: "team", value: "sales" } })).map(
        (r) => r.source_id,
      ),
    ).not.toContain(id);
  });

  it("answers 400 naming an unknown operator or a value of the wrong type", async () => {
    const res = await request("/api/knowledge/search", {
      query: "pricing",
      filters: { type: "and", filters: [{ type: "between", key: "year", value: [1, 2] }] },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as {
      error: { message: string; details: { issues: Array<{ path: string }> } };
    };
    expect(body.error.message).toMatch(/Unknown filter type "between"/);
    expect(body.error.details.issues[0]?.path).toBe("filters.filters.0.type");
  });

  it("refuses metadata with clear 400s naming the key", async () => {
    const refused = async (metadata: unknown, path: string, message: RegExp) => {
      const res = await request("/api/knowledge", { text: "Some text.", metadata });
      expect(res.status).toBe(400);
      const body = (await res.json()) as {
        error: { details: { issues: Array<{ path: string; message: string }> } };
      };
      expect(body.error.details.issues[0]?.path).toBe(path);
      expect(body.error.details.issues[0]?.message).toMatch(message);
    };
    await refused({ "bad key": 1 }, "metadata.bad key", /Key `bad key`: a letter/);
    await refused({ type: "x" }, "metadata.type", /built-in field/);
    await refused({ nested: { a: 1 } }, "metadata.nested", /Key `nested`: a string/);
    await refused({ tags: [1, 2] }, "metadata.tags", /Key `tags`/);
    await refused({ long: "x".repeat(513) }, "metadata.long", /Key `long`/);
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i]));
    await refused(seventeen, "metadata", /At most 16 keys; 17 given/);
  });

  it("takes metadata in a multipart form as JSON in its field", async () => {
    const form = new FormData();
    form.append("file", new File(["Notes on pricing."], "notes.txt", { type: "text/plain" }));
    form.append("metadata", JSON.stringify({ team: "finance" }));
    const res = await app.request("/api/knowledge", {
      method: "POST",
      headers: { authorization: `Bearer ${WS}` },
      body: form,
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    expect((await sources.get(WS, id)).metadata).toEqual({ team: "finance" });
    const bad = new FormData();
    bad.append("file", new File(["x"], "x.txt", { type: "text/plain" }));
    bad.append("metadata", "{not json");
    const refused = await app.request("/api/knowledge", {
      method: "POST",
      headers: { authorization: `Bearer ${WS}` },
      body: bad,
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(await refused.json())).toMatch(/`metadata` is not valid JSON/);
  });
});
