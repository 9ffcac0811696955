import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  decodeVectors,
  embedChunks,
  encodeVectors,
  vectorsKey,
} from "../../lib/knowledge/embeddings.js";
import { fuseRankings, HybridRetriever } from "../../lib/knowledge/hybrid.js";
import { type Delivery, Indexer, textLoader } from "../../lib/knowledge/indexer.js";
import { LexicalRetriever, type SearchResult } from "../../lib/knowledge/retrieval.js";
import type { IndexMessage, SourceItem, Sources } from "../../lib/knowledge/sources.js";
import type { Embedder } from "../../lib/llm/embeddings.js";
import { llmFor } from "../llm/helpers.js";
import { sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { FakeOpenAI } from "../support/fake-openai.js";

const WS = "ws_01JD0000000000000000000011";
const OTHER = "ws_01JD0000000000000000000012";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };

let aws: TestAws;
let fake: FakeOpenAI;
let sources: Sources;
let indexer: Indexer;
let embedder: Embedder;

beforeAll(async () => {
  [aws, fake] = await Promise.all([startAws(), FakeOpenAI.start()]);
  sources = sourcesOn(aws);
  indexer = new Indexer({
    table: aws.table,
    blobs: aws.blobs,
    chunking: { size: 400, overlap: 50 },
    loaders: { text: textLoader(aws.blobs) },
  });
  embedder = llmFor(fake).embedder as Embedder;
});
afterAll(async () => {
  await Promise.all([aws.close(), fake.close()]);
});
beforeEach(() => {
  fake.reset();
  fake.concepts(CONCEPTS);
});

/** Words the fake embedding model treats as one meaning, as a real model would. */
const CONCEPTS = {
  price: ["pricing", "cost", "costs", "expensive", "cheap", "subscription", "billing", "fee"],
  secure: ["security", "encrypted", "protected", "protection", "safe"],
  data: ["information", "records"],
  integrate: ["integration", "integrations", "connect", "sync", "crm", "salesforce", "hubspot"],
  help: ["support", "reply", "answers", "tickets", "respond"],
  refund: ["refunds", "money", "reimburse", "cancel"],
  place: ["headquarters", "based", "lisbon", "office", "located"],
  measure: ["metrics", "dashboards", "track", "analytics", "kpis"],
  start: ["started", "onboarding", "setup", "begin", "guided"],
};

/** Indexes a text source as the worker does, then embeds it as the lead's indexer hook will. */
async function addSource(workspaceId: string, text: string, name: string, embed = true) {
  const item = await sources.createText(workspaceId, text, name);
  await index(embed);
  return sources.get(workspaceId, item.id);
}

async function index(embed: boolean): Promise<SourceItem> {
  const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
  expect(await indexer.handle(message, once)).toBe("indexed");
  const source = await sources.get(message.workspaceId, message.sourceId);
  if (embed) await embedChunks({ blobs: aws.blobs, embedder }, source.chunks_key as string);
  return source;
}

const names = (results: SearchResult[]) => results.map((r) => r.name);

describe("fuseRankings", () => {
  const hit = (id: string): SearchResult => ({
    source_id: id,
    chunk_index: 0,
    text: id,
    score: 0,
    source_url_or_path: null,
    name: id,
    heading: null,
    page: null,
  });

  it("ranks first what both rankings place high, and sums 1/(k + rank)", () => {
    const fused = fuseRankings(
      [
        [hit("a"), hit("b"), hit("c")],
        [hit("b"), hit("d"), hit("a")],
      ],
      60,
    );
    expect(fused.map((r) => r.source_id)).toEqual(["b", "a", "d", "c"]);
    expect(fused[0]?.score).toBeCloseTo(1 / 62 + 1 / 61, 6);
  });
});

describe("stored vectors", () => {
  it("round-trip through their binary form", () => {
    const rows = [Float32Array.of(0.6, 0.8), Float32Array.of(1, 0)];
    expect(decodeVectors(encodeVectors(rows))).toEqual({
      dimensions: 2,
      count: 2,
      rows: Float32Array.of(0.6, 0.8, 1, 0),
    });
    expect(decodeVectors(new Uint8Array(8))).toBeUndefined();
  });

  it("sit beside the chunk set under a key naming the space, and are computed once", async () => {
    const source = await addSource(WS, "# Plans\nThe Team plan costs $99.", "Stored", false);
    const chunksKey = source.chunks_key as string;
    const key = await embedChunks({ blobs: aws.blobs, embedder }, chunksKey);
    expect(key).toBe(vectorsKey(chunksKey, embedder.space));
    expect(key).toMatch(
      new RegExp(
        `^ws/${WS}/kb/${source.id}/vectors/[0-9a-f]+\\.fake-embed-native-[0-9a-f]{8}\\.bin$`,
      ),
    );
    const stored = decodeVectors((await aws.blobs.get(key)) as Uint8Array);
    expect(stored).toMatchObject({ dimensions: fake.nativeDimensions, count: 1 });
    // The heading travels with the chunk's text into its embedding.
    expect(fake.embeddingRequests()[0]?.input).toEqual(["Plans\n\nThe Team plan costs $99."]);

    expect(await embedChunks({ blobs: aws.blobs, embedder }, chunksKey)).toBe(key);
    expect(fake.embeddingRequests()).toHaveLength(1);
  });

  it("are embedded in batches for a large source", async () => {
    const small = llmFor(fake, {}, { batch: { maxItems: 4 } }).embedder as Embedder;
    const text = Array.from({ length: 10 }, (_, i) => `## Part ${i}\nParagraph ${i} text.`).join(
      "\n\n",
    );
    const source = await addSource(WS, text, "Large", false);
    await embedChunks({ blobs: aws.blobs, embedder: small }, source.chunks_key as string);
    expect(fake.embeddingRequests().map((r) => (r.input as string[]).length)).toEqual([4, 4, 2]);
  });
});

describe("HybridRetriever", () => {
  const lexical = () => new LexicalRetriever({ table: aws.table, blobs: aws.blobs });
  const hybrid = (withEmbedder: Embedder | undefined) =>
    new HybridRetriever({
      table: aws.table,
      blobs: aws.blobs,
      lexical: lexical(),
      embedder: withEmbedder,
    });
  const ws = (n: number) => `ws_01JD00000000000000000001${String(n).padStart(2, "0")}`;

  it("is the lexical ranking, untouched, without an embedding model", async () => {
    const space = ws(1);
    await addSource(space, "Our billing runs monthly.", "Billing", false);
    expect(await hybrid(undefined).search(space, "billing", 5)).toEqual(
      await lexical().search(space, "billing", 5),
    );
    expect(fake.embeddingRequests()).toHaveLength(0);
  });

  it("finds by meaning what shares no word with the query", async () => {
    const space = ws(2);
    await addSource(space, "The Team plan costs $99 per month.", "Pricing");
    await addSource(space, "Founded in Lisbon in 2015.", "Company");
    expect(await lexical().search(space, "How expensive is a subscription?", 5)).toEqual([]);
    expect(
      names(await hybrid(embedder).search(space, "How expensive is a subscription?", 5)),
    ).toEqual(["Pricing"]);
  });

  it("never returns another workspace's or a disabled source, and sees toggles at once", async () => {
    const space = ws(3);
    const mine = await addSource(space, "Our support team answers within four hours.", "Support");
    await addSource(OTHER, "Support tickets get a reply within one hour.", "Their support");
    const retriever = hybrid(embedder);
    const query = "How fast do you respond to tickets?";
    expect(names(await retriever.search(space, query, 10))).toEqual(["Support"]);

    await sources.setEnabled(space, mine.id, false);
    expect(await retriever.search(space, query, 10)).toEqual([]);
    await sources.setEnabled(space, mine.id, true);
    expect(names(await retriever.search(space, query, 10))).toEqual(["Support"]);
    await sources.delete(space, mine.id);
    expect(await retriever.search(space, query, 10)).toEqual([]);
  });

  it("still finds sources indexed before embeddings were configured, lexically", async () => {
    const space = ws(4);
    await addSource(space, "Refunds are possible within 30 days.", "Refunds", false);
    const retriever = hybrid(embedder);
    expect(names(await retriever.search(space, "refunds policy", 5))).toEqual(["Refunds"]);
    // By meaning alone it cannot be found: it has no vectors.
    expect(await retriever.search(space, "Can I get my money back?", 5)).toEqual([]);
  });

  it("never reads vectors of another embedding model, and picks up new ones on reindex", async () => {
    const space = ws(5);
    const source = await addSource(space, "Dashboards show campaign conversion.", "Analytics");
    const other = llmFor(fake, { embeddingModel: "fake-embed-v2" }).embedder as Embedder;
    const retriever = hybrid(other);
    const query = "Which metrics can we measure?";
    expect(await retriever.search(space, query, 5)).toEqual([]);

    // Reindexing with the new model embeds the same chunks into its space; a warm retriever sees it.
    await sources.reindex(space, source.id);
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    expect(await indexer.handle(message, once)).toBe("indexed");
    const reindexed = await sources.get(space, source.id);
    expect(reindexed.chunks_key).toBe(source.chunks_key);
    await embedChunks({ blobs: aws.blobs, embedder: other }, reindexed.chunks_key as string);
    expect(names(await retriever.search(space, query, 5))).toEqual(["Analytics"]);
    expect(fake.embeddingRequests().at(-1)?.model).toBe("fake-embed-v2");
  });

  it("works with shortened vectors of any size", async () => {
    const space = ws(7);
    const short = llmFor(fake, { embeddingDimensions: 30 }).embedder as Embedder;
    const source = await addSource(space, "Guided setup for new customers.", "Setup", false);
    await embedChunks({ blobs: aws.blobs, embedder: short }, source.chunks_key as string);
    expect(names(await hybrid(short).search(space, "How do we begin onboarding?", 5))).toEqual([
      "Setup",
    ]);
    expect(fake.embeddingRequests().every((r) => r.dimensions === 30)).toBe(true);
  });

  it("answers lexically when the query cannot be embedded", async () => {
    const space = ws(6);
    await addSource(space, "Guided onboarding in the first two weeks.", "Onboarding");
    fake.fallback("embeddings", { status: 500 });
    const retriever = hybrid(embedder);
    expect(names(await retriever.search(space, "onboarding", 5))).toEqual(["Onboarding"]);
    expect(await retriever.search(space, "How do we begin?", 5)).toEqual([]);
  });
});

/**
 * A small labelled set: each query names the one document that answers it. Half the queries
 * share words with their answer, half only meaning (synonyms), as real questions do.
 */
const DOCUMENTS: Record<string, string> = {
  Pricing:
    "The Starter plan is $29 per month and the Team plan is $99 per month. Annual billing saves 20%.",
  Security:
    "All customer data is encrypted at rest and in transit. We are SOC 2 Type II certified.",
  Integrations:
    "Connect Acme to Salesforce, HubSpot and Slack in a few clicks; a REST API covers the rest.",
  Support: "Our support team answers within four hours on business days, by chat and email.",
  Onboarding:
    "New customers get a guided setup session and a migration checklist in their first two weeks.",
  Refunds: "Cancel within 30 days for a full refund, no questions asked.",
  Company: "Acme was founded in 2015 in Lisbon and employs 120 people across Europe.",
  Analytics:
    "Dashboards track campaign performance, conversion rates and attribution across channels.",
};

const QUERIES: Array<[query: string, answer: string]> = [
  ["How expensive is a subscription?", "Pricing"],
  ["Is my information protected?", "Security"],
  ["Can it sync with our CRM?", "Integrations"],
  ["How fast do you reply to tickets?", "Support"],
  ["Can I get my money back?", "Refunds"],
  ["Where is the headquarters?", "Company"],
  ["Which metrics can we measure?", "Analytics"],
  ["How do we get started?", "Onboarding"],
  ["SOC 2 certification", "Security"],
  ["Slack integration", "Integrations"],
  ["refund policy", "Refunds"],
  ["Team plan price per month", "Pricing"],
];

describe("hybrid ranking against lexical alone, on a labelled query set", () => {
  const space = "ws_01JD0000000000000000000099";

  /** Mean reciprocal rank of the right answer in the top 5, and how often it is first. */
  async function evaluate(search: (query: string) => Promise<SearchResult[]>) {
    let reciprocal = 0;
    let first = 0;
    for (const [query, answer] of QUERIES) {
      const rank = names(await search(query)).indexOf(answer) + 1;
      if (rank > 0) reciprocal += 1 / rank;
      if (rank === 1) first += 1;
    }
    return { mrr: reciprocal / QUERIES.length, first };
  }

  it("ranks the right document higher", async () => {
    for (const [name, text] of Object.entries(DOCUMENTS)) await addSource(space, text, name);
    const lexicalOnly = new LexicalRetriever({ table: aws.table, blobs: aws.blobs });
    const hybrid = new HybridRetriever({
      table: aws.table,
      blobs: aws.blobs,
      lexical: new LexicalRetriever({ table: aws.table, blobs: aws.blobs }),
      embedder,
    });
    const lexicalScore = await evaluate((q) => lexicalOnly.search(space, q, 5));
    const hybridScore = await evaluate((q) => hybrid.search(space, q, 5));
    expect(hybridScore.mrr).toBeGreaterThan(lexicalScore.mrr + 0.25);
    expect(hybridScore.first).toBeGreaterThan(lexicalScore.first);
    expect(hybridScore.mrr).toBeGreaterThanOrEqual(0.75);
  });
});
