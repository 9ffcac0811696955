import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textLoader } from "../../lib/knowledge/indexing/indexer.js";
import { migrateWorkspace } from "../../lib/knowledge/indexing/migrate-index.js";
import { LiveSources } from "../../lib/knowledge/retrieval/live-sources.js";
import { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { DynamoWriterLock, SearchIndex } from "../../lib/search/index.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { wsKey } from "../../lib/store/table.js";
import { indexerOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";

const WS = "ws_01JD00000000000000000MIGR1";
let aws: TestAws;
let dir: string;

beforeAll(async () => {
  aws = await startAws();
  dir = await mkdtemp(join(tmpdir(), "kb-migrate-"));
  const sources = sourcesOn(aws);
  const indexer = indexerOn(aws, { text: textLoader(aws.blobs) });
  for (let i = 0; i < 7; i++) {
    await sources.createText(WS, `Launch plan number ${i} for the orbital widget.`, `plan ${i}`);
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    expect(await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 })).toBe("indexed");
  }
});
afterAll(async () => {
  await aws.close();
  await rm(dir, { recursive: true, force: true });
});

describe("migrating stored chunk sets into the search index", () => {
  it("makes a workspace indexed before the index existed searchable, and is safe to run twice", async () => {
    // A deployment from before the persisted index: its chunk sets are stored, its index empty.
    const fresh = new SearchIndex({
      location: { uri: dir },
      lock: new DynamoWriterLock(aws.table),
    });
    const retriever = new IndexRetriever({ index: fresh, live: new LiveSources(aws.table) });
    expect(await retriever.search(WS, "orbital widget", 20)).toEqual([]);

    const deps = { table: aws.table, blobs: aws.blobs, search: fresh };
    expect(await migrateWorkspace(deps, WS)).toEqual({
      sources: 7,
      chunks: 7,
      vectors: 0,
      urlsClaimed: 0,
      duplicates: [],
    });
    const once = await retriever.search(WS, "orbital widget", 20);
    expect(once.map((r) => r.name).sort()).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `plan ${i}`));

    await migrateWorkspace(deps, WS);
    const twice = await retriever.search(WS, "orbital widget", 20);
    expect(twice).toHaveLength(7);
    expect(new Set(twice.map((r) => `${r.source_id}#${r.chunk_index}`)).size).toBe(7);
  });
});

describe("migrating URL sources that predate one source per URL", () => {
  const ws = "ws_01JD00000000000000000MIGR2";
  const pricing = "https://example.com/pricing";
  const about = "https://example.com/about";

  /** Removes every URL claim of the workspace, as a deployment from before claims has none. */
  async function forgetClaims() {
    for (const claim of await aws.table.all(wsKey(ws), "KBURL#")) {
      await aws.table.delete(claim.pk, claim.sk);
    }
  }

  it("claims each URL for its oldest source, reports the copies, and is safe to run twice", async () => {
    const sources = sourcesOn(aws);
    const first = (await sources.addUrl(ws, { url: pricing, name: "Pricing" })).item;
    await forgetClaims();
    const copy = await sources.addUrl(ws, { url: pricing, name: "Pricing again" });
    expect(copy.created).toBe(true);
    const other = (await sources.addUrl(ws, { url: about, name: "About" })).item;
    await forgetClaims();

    const deps = { table: aws.table, blobs: aws.blobs, search: aws.search };
    expect(await migrateWorkspace(deps, ws)).toMatchObject({
      urlsClaimed: 2,
      duplicates: [copy.item.id],
    });
    expect(await sources.addUrl(ws, { url: pricing, name: "Pricing" })).toMatchObject({
      created: false,
      item: { id: first.id },
    });
    expect(await sources.addUrl(ws, { url: about, name: "About" })).toMatchObject({
      created: false,
      item: { id: other.id },
    });
    expect(await migrateWorkspace(deps, ws)).toMatchObject({
      urlsClaimed: 0,
      duplicates: [copy.item.id],
    });
  });
});
