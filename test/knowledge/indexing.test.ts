import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Indexer, textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { spansKeyOf, textKeyOf } from "../../lib/knowledge/indexing/passages.js";
import { LiveSources } from "../../lib/knowledge/retrieval/live-sources.js";
import { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { type Sources, sourceBlobPrefix } from "../../lib/knowledge/sources/sources.js";
import { DynamoWriterLock, SearchIndex } from "../../lib/search/index.js";
import type { Delivery, IndexMessage } from "../../lib/store/queue.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";

const WS = "ws_01JD0000000000000000000001";
const OTHER = "ws_01JD0000000000000000000002";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };

let aws: TestAws;
let sources: Sources;
let indexer: Indexer;
let retriever: IndexRetriever;

beforeAll(async () => {
  aws = await startAws();
  sources = sourcesOn(aws);
  indexer = indexerOn(aws, { text: textLoader(aws.blobs) });
  retriever = retrieverOn(aws);
});
afterAll(() => aws.close());

/** Ids of the sources whose rows the search index holds for `text`, whatever their state. */
async function indexedSourceIds(workspaceId: string, text: string): Promise<string[]> {
  const hits = await aws.search.search(workspaceId, { text, limit: 100 });
  return [...new Set(hits.map((hit) => hit.source_id))];
}

/** The index message the service queued last. */
function lastMessage(): IndexMessage {
  return JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
}

async function addIndexed(workspaceId: string, text: string, name = "doc") {
  const item = await sources.createText(workspaceId, text, name);
  expect(await indexer.handle(lastMessage(), once)).toBe("indexed");
  return item;
}

describe("indexing", () => {
  it("queues a message, chunks the text into the bucket and marks the source indexed", async () => {
    const item = await sources.createText(WS, "# Pricing\nPro costs $49 a month.", "Pricing page");
    expect(item.status).toBe("indexing");
    const message = lastMessage();
    expect(message).toEqual({ kind: "index", workspaceId: WS, sourceId: item.id, revision: 1 });

    expect(await indexer.handle(message, once)).toBe("indexed");
    const done = await sources.get(WS, item.id);
    expect(done).toMatchObject({ status: "indexed", chunk_count: 1, last_error: null });
    expect(done.indexed_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const stored = await aws.blobs.list(sourceBlobPrefix(WS, item.id));
    // The chunk set, and beside it the text it was made from and its chunks' spans.
    const key = done.chunks_key as string;
    expect(stored.filter((k) => k.includes("/chunks/")).sort()).toEqual(
      [key, spansKeyOf(key), textKeyOf(key)].sort(),
    );
    // Its chunk is in the search index, with the heading the chunker found.
    const hits = await aws.search.search(WS, { text: "pro costs", limit: 5 });
    expect(hits).toEqual([
      expect.objectContaining({
        id: `${item.id}#0`,
        source_id: item.id,
        chunk_index: 0,
        heading: "Pricing",
      }),
    ]);
  });

  it("treats a duplicate message as done and changes nothing", async () => {
    const item = await addIndexed(WS, "Duplicate delivery text.");
    const before = await sources.get(WS, item.id);
    expect(await indexer.handle(lastMessage(), once)).toBe("skipped");
    expect(await sources.get(WS, item.id)).toEqual(before);
  });

  it("skips a stale message from before a reindex, then indexes the new revision", async () => {
    const item = await addIndexed(WS, "Reindexed text about launches.");
    const stale = lastMessage();
    await sources.reindex(WS, item.id);
    const fresh = lastMessage();
    expect(fresh.revision).toBe(stale.revision + 1);
    expect(await indexer.handle(stale, once)).toBe("skipped");
    expect((await sources.get(WS, item.id)).status).toBe("indexing");
    expect(await indexer.handle(fresh, once)).toBe("indexed");
  });

  it("replaces a reindexed source's rows in the search index with its new text", async () => {
    const item = await addIndexed(WS, "Original words about lighthouses.");
    expect(await indexedSourceIds(WS, "lighthouses")).toEqual([item.id]);
    await aws.blobs.put(
      item.content_key as string,
      "Rewritten words about windmills.",
      "text/plain",
    );
    await sources.reindex(WS, item.id);
    expect(await indexer.handle(lastMessage(), once)).toBe("indexed");
    expect(await indexedSourceIds(WS, "lighthouses")).toEqual([]);
    expect(await indexedSourceIds(WS, "windmills")).toEqual([item.id]);
  });

  it("never resurrects a deleted source, even when its message arrives late", async () => {
    const item = await sources.createText(WS, "Soon deleted.", "gone");
    const message = lastMessage();
    await sources.delete(WS, item.id);
    expect(await indexer.handle(message, once)).toBe("skipped");
    await expect(sources.get(WS, item.id)).rejects.toMatchObject({ code: "not_found" });
    expect(await aws.blobs.list(sourceBlobPrefix(WS, item.id))).toEqual([]);
    expect(await indexedSourceIds(WS, "soon deleted")).toEqual([]);
  });

  it("removes a deleted source's rows from the search index when its removal message arrives", async () => {
    const item = await addIndexed(WS, "Soon removed from the index: zeppelins.");
    expect(await indexedSourceIds(WS, "zeppelins")).toEqual([item.id]);
    await sources.delete(WS, item.id);
    const removal = lastMessage();
    expect(removal).toMatchObject({ workspaceId: WS, sourceId: item.id });
    // Until then the rows are still there, but search never returns them.
    expect(await indexedSourceIds(WS, "zeppelins")).toEqual([item.id]);
    expect(await retriever.search(WS, "zeppelins", 5)).toEqual([]);
    expect(await indexer.handle(removal, once)).toBe("skipped");
    expect(await indexedSourceIds(WS, "zeppelins")).toEqual([]);
    // A redelivery finds nothing left to remove.
    expect(await indexer.handle(removal, once)).toBe("skipped");
  });

  it("fails a source with no readable text, with a stable code, and recovers on reindex", async () => {
    const item = await sources.createText(WS, "\u0007\u0008", "control characters only");
    expect(await indexer.handle(lastMessage(), once)).toBe("failed");
    expect(await sources.get(WS, item.id)).toMatchObject({
      status: "failed",
      error_code: "empty_content",
      last_error: "The source has no readable text to index",
    });
    await aws.blobs.put(item.content_key as string, "Now there is text.", "text/plain");
    await sources.reindex(WS, item.id);
    expect(await indexer.handle(lastMessage(), once)).toBe("indexed");
    expect(await sources.get(WS, item.id)).toMatchObject({
      status: "indexed",
      last_error: null,
      error_code: null,
    });
  });

  it("marks the source failed on the last delivery of a message that keeps failing", async () => {
    const item = await sources.createText(WS, "Content whose object vanishes.", "flaky");
    const broken = new Indexer({
      table: aws.table,
      blobs: aws.blobs,
      search: aws.search,
      chunking: { size: 300, overlap: 50 },
      loaders: {
        text: async () => {
          throw new Error("S3 is having a bad day");
        },
      },
    });
    const message = lastMessage();
    await expect(broken.handle(message, { receiveCount: 1, maxReceiveCount: 3 })).rejects.toThrow();
    expect((await sources.get(WS, item.id)).status).toBe("indexing");
    await expect(broken.handle(message, { receiveCount: 3, maxReceiveCount: 3 })).rejects.toThrow();
    // Never a bare internal_error: the cause is named.
    const failed = await sources.get(WS, item.id);
    expect(failed).toMatchObject({ status: "failed", error_code: "indexing_error" });
    expect(failed.last_error).toContain("S3 is having a bad day");
  });
});

describe("listing", () => {
  it("pages newest first with an opaque cursor, and filters before cutting pages", async () => {
    const ws = "ws_01JD0000000000000000000003";
    for (let i = 0; i < 5; i++) await sources.createText(ws, `Text ${i}`, `n${i}`);
    const first = await sources.list(ws, {}, 2);
    expect(first.items.map((s) => s.name)).toEqual(["n4", "n3"]);
    const second = await sources.list(ws, {}, 2, first.nextCursor as string);
    expect(second.items.map((s) => s.name)).toEqual(["n2", "n1"]);
    const third = await sources.list(ws, {}, 2, second.nextCursor as string);
    expect(third.items.map((s) => s.name)).toEqual(["n0"]);
    expect(third.nextCursor).toBeNull();

    const [, b] = first.items;
    await sources.setEnabled(ws, b?.id as string, false);
    const disabled = await sources.list(ws, { enabled: 0 }, 10);
    expect(disabled.items.map((s) => s.name)).toEqual(["n3"]);
    await expect(sources.list(ws, {}, 2, "bm90LWEtY3Vyc29y")).rejects.toMatchObject({
      code: "invalid_cursor",
    });
  });
});

describe("lexical retrieval", () => {
  it("ranks by relevance over enabled, indexed sources of the workspace only", async () => {
    const ws = "ws_01JD0000000000000000000004";
    const pricing = await addIndexed(
      ws,
      "# Pricing\nThe Pro plan costs $49 per seat per month.",
      "pricing",
    );
    await addIndexed(ws, "# Team\nOur team of twelve works remotely from Berlin.", "team");
    await addIndexed(OTHER, "# Pricing\nA rival's secret pricing sheet.", "other workspace");

    const results = await retriever.search(ws, "pro plan pricing", 5);
    expect(results[0]).toMatchObject({
      source_id: pricing.id,
      name: "pricing",
      chunk_index: 0,
      heading: "Pricing",
    });
    expect(results.every((r) => r.name !== "other workspace")).toBe(true);

    await sources.setEnabled(ws, pricing.id, false);
    expect((await retriever.search(ws, "pro plan pricing", 5)).map((r) => r.name)).not.toContain(
      "pricing",
    );
    await sources.setEnabled(ws, pricing.id, true);
    expect((await retriever.search(ws, "pro plan pricing", 5))[0]?.name).toBe("pricing");

    await sources.delete(ws, pricing.id);
    expect((await retriever.search(ws, "pricing", 5)).map((r) => r.name)).not.toContain("pricing");
  });

  it("finds every source that holds the words, however often a chunk repeats them", async () => {
    // The workspace's first source builds the full-text index; later ones are written after it,
    // until maintenance folds them in. A later source must be found as soon as it is indexed,
    // and so must one beside it that says the word once.
    const ws = "ws_01JD0000000000000000000007";
    await addIndexed(ws, "# Plans\nHello pricing world.", "first");
    await addIndexed(ws, "Pricing, pricing and more pricing: our pricing page.", "repeats");
    await addIndexed(ws, "A later note on pricing.", "once");
    const results = await retriever.search(ws, "pricing", 5);
    expect(results.map((r) => r.name).sort()).toEqual(["first", "once", "repeats"]);
    // The chunk that says it most ranks first.
    expect(results[0]?.name).toBe("repeats");
  });

  it("finds words in scripts written without spaces", async () => {
    const ws = "ws_01JD0000000000000000000005";
    await addIndexed(ws, "我们的产品价格是每月四十九美元。", "zh");
    await addIndexed(ws, "Привет, это документ о ценах.", "ru");
    expect((await retriever.search(ws, "价格", 5))[0]?.name).toBe("zh");
    expect((await retriever.search(ws, "ценах", 5))[0]?.name).toBe("ru");
  });

  it("answers concurrent first searches of a fresh process from the persisted index, and sees what another indexes next", async () => {
    const ws = "ws_01JD0000000000000000000006";
    const dir = await mkdtemp(join(tmpdir(), "kb-search-cold-"));
    try {
      const location = { uri: dir };
      const writer = new Indexer({
        table: aws.table,
        blobs: aws.blobs,
        search: new SearchIndex({ location, lock: new DynamoWriterLock(aws.table) }),
        chunking: { size: 300, overlap: 50 },
        loaders: { text: textLoader(aws.blobs) },
      });
      const item = await sources.createText(ws, "Concurrency test content about webinars.", "c");
      expect(await writer.handle(lastMessage(), once)).toBe("indexed");
      // Another process: its own index instance on the same data, nothing opened or cached yet.
      const fresh = new IndexRetriever({
        index: new SearchIndex({ location, lock: new DynamoWriterLock(aws.table) }),
        live: new LiveSources(aws.table),
      });
      const all = await Promise.all(
        Array.from({ length: 5 }, () => fresh.search(ws, "webinars", 5)),
      );
      for (const results of all) {
        expect(results).toEqual([
          expect.objectContaining({ source_id: item.id, name: "c", chunk_index: 0 }),
        ]);
      }
      // Its tables are open now; the workspace's counter moved, so its next search looks for the
      // index's newest version and finds the source the other process just indexed.
      const next = await sources.createText(ws, "Later content about podcasts.", "d");
      expect(await writer.handle(lastMessage(), once)).toBe("indexed");
      const found = await fresh.search(ws, "podcasts", 5);
      expect(found.map((result) => result.source_id)).toEqual([next.id]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
