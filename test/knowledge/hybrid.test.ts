import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Chunk } from "../../lib/knowledge/indexing/chunking.js";
import {
  decodeVectors,
  embedChunks,
  encodeVectors,
  vectorsKey,
} from "../../lib/knowledge/indexing/embeddings.js";
import {
  type Indexer,
  type StoredChunks,
  textLoader,
} from "../../lib/knowledge/indexing/indexer.js";
import type { SearchResult } from "../../lib/knowledge/retrieval/retrieval.js";
import type { SourceItem, Sources } from "../../lib/knowledge/sources/sources.js";
import type { Embedder } from "../../lib/llm/embeddings.js";
import type { Delivery, IndexMessage } from "../../lib/store/queue.js";
import { llmFor } from "../llm/helpers.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";
import { FakeOpenAI } from "../support/fake-openai.js";

const OTHER = "ws_01JD0000000000000000000012";
const once: Delivery = { receiveCount: 1, maxReceiveCount: 3 };
const CHUNKING = { size: 400, overlap: 50 };

let aws: TestAws;
let fake: FakeOpenAI;
let sources: Sources;
let embedder: Embedder;
/** The index worker without an embedding model: lexical rows only. */
let plainIndexer: Indexer;
/** The index worker with the embedding model: rows and their vectors. */
let embeddingIndexer: Indexer;

const indexerWith = (withEmbedder: Embedder | undefined) =>
  indexerOn(aws, { text: textLoader(aws.blobs) }, CHUNKING, withEmbedder);

beforeAll(async () => {
  [aws, fake] = await Promise.all([startAws(), FakeOpenAI.start()]);
  sources = sourcesOn(aws);
  embedder = llmFor(fake).embedder as Embedder;
  plainIndexer = indexerWith(undefined);
  embeddingIndexer = indexerWith(embedder);
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

/**
 * Adds a text source and indexes it as the worker does: with the embedding model when `embed`
 * (another indexer when given one), without one otherwise.
 */
async function addSource(
  workspaceId: string,
  text: string,
  name: string,
  embed: boolean | Indexer = true,
): Promise<SourceItem> {
  const item = await sources.createText(workspaceId, text, name);
  const indexer = embed === true ? embeddingIndexer : embed === false ? plainIndexer : embed;
  expect(await indexer.handle(lastMessage(), once)).toBe("indexed");
  return sources.get(workspaceId, item.id);
}

function lastMessage(): IndexMessage {
  return JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
}

/** The chunk set a source was indexed from, as the bucket holds it. */
async function storedChunks(source: SourceItem): Promise<Chunk[]> {
  const stored = await aws.blobs.getJson<StoredChunks>(source.chunks_key as string);
  if (!stored) throw new Error(`No chunk set for ${source.id}`);
  return stored.chunks;
}

const names = (results: SearchResult[]) => results.map((r) => r.name);

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
    const WS = "ws_01JD0000000000000000000011";
    const source = await addSource(WS, "# Plans\nThe Team plan costs $99.", "Stored", false);
    const chunksKey = source.chunks_key as string;
    const chunks = await storedChunks(source);
    const first = await embedChunks({ blobs: aws.blobs, embedder }, chunksKey, chunks);
    expect(first.key).toBe(vectorsKey(chunksKey, embedder.space));
    expect(first.key).toMatch(
      new RegExp(
        `^ws/${WS}/kb/${source.id}/vectors/[0-9a-f]+\\.fake-embed-native-[0-9a-f]{8}\\.bin$`,
      ),
    );
    const stored = decodeVectors((await aws.blobs.get(first.key)) as Uint8Array);
    expect(stored).toMatchObject({ dimensions: fake.nativeDimensions, count: 1 });
    // The vectors answered are the ones stored, one per chunk.
    expect(first.vectors).toHaveLength(1);
    expect(Array.from(first.vectors[0] as Float32Array)).toEqual(Array.from(stored?.rows ?? []));
    // The heading travels with the chunk's text into its embedding.
    expect(fake.embeddingRequests()[0]?.input).toEqual(["Plans\n\nThe Team plan costs $99."]);

    const again = await embedChunks({ blobs: aws.blobs, embedder }, chunksKey, chunks);
    expect(again.key).toBe(first.key);
    expect(again.vectors.map((v) => Array.from(v))).toEqual(
      first.vectors.map((v) => Array.from(v)),
    );
    expect(fake.embeddingRequests()).toHaveLength(1);
  });

  it("are embedded in batches for a large source", async () => {
    const WS = "ws_01JD0000000000000000000011";
    const small = llmFor(fake, {}, { batch: { maxItems: 4 } }).embedder as Embedder;
    const text = Array.from({ length: 10 }, (_, i) => `## Part ${i}\nParagraph ${i} text.`).join(
      "\n\n",
    );
    const source = await addSource(WS, text, "Large", false);
    const chunks = await storedChunks(source);
    expect(chunks).toHaveLength(10);
    const { vectors } = await embedChunks(
      { blobs: aws.blobs, embedder: small },
      source.chunks_key as string,
      chunks,
    );
    expect(vectors).toHaveLength(10);
    expect(fake.embeddingRequests().map((r) => (r.input as string[]).length)).toEqual([4, 4, 2]);
  });
});

describe("search over the index, with and without an embedding model", () => {
  const lexical = () => retrieverOn(aws);
  const hybrid = (withEmbedder: Embedder) => retrieverOn(aws, withEmbedder);
  const ws = (n: number) => `ws_01JD00000000000000000001${String(n).padStart(2, "0")}`;

  it("is the lexical ranking, untouched, without an embedding model", async () => {
    const space = ws(1);
    // Embedded sources, so vectors are there to be used, and must not be without a model.
    await addSource(space, "Our billing runs monthly.", "Billing");
    await addSource(space, "Billing questions go to the billing team by email.", "Billing help");
    await addSource(space, "The Team plan costs $99 per month.", "Pricing");
    fake.reset();
    const results = await lexical().search(space, "billing", 5);
    const engine = await aws.search.search(space, { text: "billing", limit: 5 });
    expect(results.map((r) => [r.source_id, r.chunk_index, r.score])).toEqual(
      engine.map((hit) => [hit.source_id, hit.chunk_index, Math.round(hit.score * 1e4) / 1e4]),
    );
    expect(names(results).sort()).toEqual(["Billing", "Billing help"]);
    expect(await lexical().search(space, "How expensive is a subscription?", 5)).toEqual([]);
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
    expect(names(await retriever.search(OTHER, query, 10))).toEqual(["Their support"]);

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
    // The model the source was embedded with does find it.
    expect(names(await hybrid(embedder).search(space, query, 5))).toEqual(["Analytics"]);

    // Reindexing with the new model embeds the same chunks into its space; a warm retriever sees it.
    await sources.reindex(space, source.id);
    expect(await indexerWith(other).handle(lastMessage(), once)).toBe("indexed");
    const reindexed = await sources.get(space, source.id);
    expect(reindexed.chunks_key).toBe(source.chunks_key);
    expect(fake.embeddingRequests().at(-1)).toMatchObject({
      model: "fake-embed-v2",
      input: ["Dashboards show campaign conversion."],
    });
    expect(names(await retriever.search(space, query, 5))).toEqual(["Analytics"]);
    expect(fake.embeddingRequests().at(-1)?.model).toBe("fake-embed-v2");
  });

  it("works with shortened vectors of any size", async () => {
    const space = ws(7);
    const short = llmFor(fake, { embeddingDimensions: 30 }).embedder as Embedder;
    await addSource(space, "Guided setup for new customers.", "Setup", indexerWith(short));
    expect(names(await hybrid(short).search(space, "How do we begin onboarding?", 5))).toEqual([
      "Setup",
    ]);
    expect(fake.embeddingRequests()).toHaveLength(2);
    expect(fake.embeddingRequests().every((r) => r.dimensions === 30)).toBe(true);
  });

  it("answers lexically when the query cannot be embedded", async () => {
    const space = ws(6);
    await addSource(space, "Guided onboarding in the first two weeks.", "Onboarding");
    const retriever = hybrid(embedder);
    // By meaning while the model answers...
    expect(names(await retriever.search(space, "How do we begin?", 5))).toEqual(["Onboarding"]);
    fake.fallback("embeddings", { status: 500 });
    // ...and by words alone once it fails.
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

  /** The rank of the right answer in the top 5 of each query, 0 when it is not there. */
  async function ranks(search: (query: string) => Promise<SearchResult[]>): Promise<number[]> {
    const found: number[] = [];
    for (const [query, answer] of QUERIES)
      found.push(names(await search(query)).indexOf(answer) + 1);
    return found;
  }

  /** Mean reciprocal rank of the right answer in the top 5, and how often it is first. */
  function evaluate(found: number[]) {
    const reciprocal = found.reduce((sum, rank) => sum + (rank > 0 ? 1 / rank : 0), 0);
    return { mrr: reciprocal / found.length, first: found.filter((rank) => rank === 1).length };
  }

  let lexicalRanks: number[];
  let hybridRanks: number[];
  beforeAll(async () => {
    fake.reset();
    fake.concepts(CONCEPTS);
    for (const [name, text] of Object.entries(DOCUMENTS)) await addSource(space, text, name);
    const lexicalOnly = retrieverOn(aws);
    const hybrid = retrieverOn(aws, embedder);
    lexicalRanks = await ranks((q) => lexicalOnly.search(space, q, 5));
    hybridRanks = await ranks((q) => hybrid.search(space, q, 5));
  });

  it("ranks the right document higher", () => {
    const lexicalScore = evaluate(lexicalRanks);
    const hybridScore = evaluate(hybridRanks);
    expect(hybridScore.mrr).toBeGreaterThan(lexicalScore.mrr + 0.25);
    expect(hybridScore.first).toBeGreaterThan(lexicalScore.first);
    expect(hybridScore.mrr).toBeGreaterThanOrEqual(0.75);
  });

  it("is never worse than lexical alone: no right answer lexical ranks is ranked lower", () => {
    // The set has both kinds: queries lexical answers, and queries only meaning answers.
    expect(lexicalRanks.some((rank) => rank > 0)).toBe(true);
    expect(lexicalRanks.some((rank) => rank === 0)).toBe(true);
    QUERIES.forEach(([query], i) => {
      const lexicalRank = lexicalRanks[i] as number;
      if (lexicalRank > 0) expect(hybridRanks[i], query).toBeLessThanOrEqual(lexicalRank);
    });
  });
});
