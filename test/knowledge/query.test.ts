import type { QueryBase } from "@lancedb/lancedb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { textLoader } from "../../lib/knowledge/indexing/indexer.js";
import type { IndexRetriever } from "../../lib/knowledge/retrieval/retrieval.js";
import { engine } from "../../lib/search/engine.js";
import { MAX_QUERY_TERMS, queryTerms } from "../../lib/search/terms.js";
import type { IndexMessage } from "../../lib/store/queue.js";
import { indexerOn, retrieverOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";

describe("queryTerms", () => {
  it("lowercases and counts a repeated word once, in query order", () => {
    expect(queryTerms("Pricing plans PRICING pricing, Plans?")).toEqual(["pricing", "plans"]);
  });

  it(`keeps the first ${MAX_QUERY_TERMS} distinct words`, () => {
    const words = Array.from({ length: 100 }, (_, i) => `word${i}`);
    expect(queryTerms(words.join(" "))).toEqual(words.slice(0, MAX_QUERY_TERMS));
  });

  it("counts only distinct words towards the cap, so repeats never push a word out", () => {
    const words = Array.from({ length: MAX_QUERY_TERMS }, (_, i) => `word${i}`);
    const query = words.flatMap((word) => [word, word.toUpperCase(), "word0"]).join(" ");
    expect(queryTerms(query)).toEqual(words);
  });
});

describe("an adversarial query on a 50,000-chunk workspace", () => {
  const WS = "ws_01JD0000000000000000000031";
  const CHUNKS = 50_000;
  /** 400 distinct words (`ably`, `bbly`, ...); each chunk holds five, so each is in hundreds. */
  const WORDS = Array.from(
    { length: 400 },
    (_, i) => `${String.fromCharCode(97 + (i % 26), 97 + Math.floor(i / 26))}ly`,
  );
  /** A word every chunk holds: the longest list of matches a single word can have. */
  const EVERYWHERE = "every";
  let aws: TestAws;
  let retriever: IndexRetriever;

  beforeAll(async () => {
    aws = await startAws();
    // One short paragraph per chunk: the common word and five of the 400.
    const paragraphs = Array.from({ length: CHUNKS }, (_, i) => [
      EVERYWHERE,
      ...Array.from({ length: 5 }, (_, j) => WORDS[(i * 13 + j * 101) % 400]),
    ]).map((words) => words.join(" "));
    await sourcesOn(aws).createText(WS, paragraphs.join("\n\n"), "Many chunks");
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    const indexer = indexerOn(aws, { text: textLoader(aws.blobs) }, { size: 40, overlap: 0 });
    expect(await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 })).toBe("indexed");
    retriever = retrieverOn(aws);
    const warm = await retriever.search(WS, WORDS[0] as string, 50);
    expect(warm).toHaveLength(50);
    expect(warm.every((r) => r.text.split(" ").includes(WORDS[0] as string))).toBe(true);
    // Every paragraph is a chunk of its own.
    const { chunk_count } = await sourcesOn(aws).get(WS, warm[0]?.source_id as string);
    expect(chunk_count).toBe(CHUNKS);
  }, 120_000);
  afterAll(() => aws.close());

  /**
   * The words of each full-text match the engine was asked for while `search` ran, read from the
   * plans of the queries it executed: what a search costs is a lookup of each.
   */
  async function wordsLookedUp(search: () => Promise<unknown>): Promise<string[][]> {
    const { lance } = await engine();
    type Executed = QueryBase<never>;
    const executed: Executed[] = [];
    const toArray = lance.QueryBase.prototype.toArray;
    const spy = vi.spyOn(lance.QueryBase.prototype, "toArray").mockImplementation(function (
      this: Executed,
      ...args
    ) {
      executed.push(this);
      return toArray.apply(this, args);
    });
    try {
      await search();
    } finally {
      spy.mockRestore();
    }
    const plans = await Promise.all(executed.map((query) => query.explainPlan(true)));
    return plans.flatMap((plan) =>
      [...plan.matchAll(/MatchQuery \{ column: Some\("\w+"\), terms: "([^"]*)"/g)].map(
        ([, terms]) => (terms ?? "").split(" "),
      ),
    );
  }

  it.each([
    [`400 repeats of the word every chunk holds`, `${EVERYWHERE} `.repeat(400), [EVERYWHERE]],
    [
      "400 distinct words, each in hundreds of chunks",
      WORDS.join(" "),
      WORDS.slice(0, MAX_QUERY_TERMS),
    ],
  ])("answers %s by looking up its first distinct words only", async (_name, query, searched) => {
    // What bounds the search's cost, asserted instead of timed (its latency is the bench's):
    // whatever the query, the engine looks up at most MAX_QUERY_TERMS words, each once, in each
    // column of each chunk table.
    const lookups = await wordsLookedUp(() => retriever.search(WS, query, 10));
    expect(lookups.length).toBeGreaterThan(0);
    for (const words of lookups) expect(words).toEqual(searched);
    const results = await retriever.search(WS, query, 10);
    expect(results).toHaveLength(10);
    for (const { text } of results) {
      expect(text.split(" ").some((word) => searched.includes(word))).toBe(true);
    }
  });

  it("never finds a chunk by a word past the query's cap", async () => {
    // The words past the first 32 distinct ones, alone, find chunks; after 32 others, nothing.
    const late = WORDS[MAX_QUERY_TERMS + 5] as string;
    expect(await retriever.search(WS, late, 1)).toHaveLength(1);
    const padding = Array.from({ length: MAX_QUERY_TERMS }, (_, i) => `absent${i}`);
    expect(await retriever.search(WS, [...padding, late].join(" "), 10)).toEqual([]);
  });
});
