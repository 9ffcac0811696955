import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textLoader } from "../../lib/knowledge/indexer.js";
import { MAX_PREFIX_TERMS, MAX_QUERY_TERMS, queryTerms } from "../../lib/knowledge/query.js";
import { LexicalRetriever, tokenize } from "../../lib/knowledge/retrieval.js";
import type { IndexMessage } from "../../lib/knowledge/sources.js";
import { indexerOn, sourcesOn, startAws, type TestAws } from "../support/aws.js";

describe("queryTerms", () => {
  it("lowercases and counts a repeated word once, in query order", () => {
    expect(queryTerms("Pricing plans PRICING pricing, Plans?", tokenize).terms).toEqual([
      "pricing",
      "plans",
    ]);
  });

  it(`keeps the first ${MAX_QUERY_TERMS} distinct words`, () => {
    const words = Array.from({ length: 100 }, (_, i) => `word${i}`);
    expect(queryTerms(words.join(" "), tokenize).terms).toEqual(words.slice(0, MAX_QUERY_TERMS));
  });

  it(`expands only the first ${MAX_PREFIX_TERMS} words of four letters or more as prefixes`, () => {
    const long = Array.from({ length: 12 }, (_, i) => `long${i}`);
    const { terms, prefix } = queryTerms(["a", "an", "the", ...long].join(" "), tokenize);
    expect(terms.filter(prefix)).toEqual(long.slice(0, MAX_PREFIX_TERMS));
  });
});

describe("an adversarial query on a 50,000-chunk workspace", () => {
  const WS = "ws_01JD0000000000000000000031";
  const CHUNKS = 50_000;
  /** 400 distinct four-letter stems; the index holds each only inside longer words (`ably17`). */
  const STEMS = Array.from(
    { length: 400 },
    (_, i) => `${String.fromCharCode(97 + (i % 26), 97 + Math.floor(i / 26))}ly`,
  );
  let aws: TestAws;
  let retriever: LexicalRetriever;

  beforeAll(async () => {
    aws = await startAws();
    // One short paragraph per chunk: six words, each a stem with one of 100 endings.
    const paragraphs = Array.from({ length: CHUNKS }, (_, i) =>
      Array.from({ length: 6 }, (_, j) => `${STEMS[(i * 13 + j * 101) % 400]}${(i + j) % 100}`),
    ).map((words) => words.join(" "));
    await sourcesOn(aws).createText(WS, paragraphs.join("\n\n"), "Many chunks");
    const message = JSON.parse(aws.queues.pending("index").at(-1) as string) as IndexMessage;
    const indexer = indexerOn(aws, { text: textLoader(aws.blobs) }, { size: 60, overlap: 0 });
    expect(await indexer.handle(message, { receiveCount: 1, maxReceiveCount: 3 })).toBe("indexed");
    retriever = new LexicalRetriever({ table: aws.table, blobs: aws.blobs });
    // The first search loads the workspace's index; the timings below are of searches alone.
    const warm = await retriever.search(WS, `${STEMS[0]}0`, 50);
    expect(warm.length).toBe(50);
    expect(warm.every((r) => r.text.split(" ").includes(`${STEMS[0]}0`))).toBe(true);
  }, 60_000);
  afterAll(() => aws.close());

  it.each([
    ["400 repeats of one four-letter word", `${STEMS[7]} `.repeat(400), STEMS.slice(7, 8)],
    ["400 distinct four-letter words", STEMS.join(" "), STEMS.slice(0, MAX_PREFIX_TERMS)],
  ])("answers %s in under 200 ms, matching by prefix", async (_name, query, expanded) => {
    // The fastest of three: the search's own cost, not a pause of a loaded machine.
    let elapsed = Number.POSITIVE_INFINITY;
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      await retriever.search(WS, query, 10);
      elapsed = Math.min(elapsed, performance.now() - started);
    }
    const results = await retriever.search(WS, query, 10);
    expect(results).toHaveLength(10);
    for (const { text } of results) {
      expect(text.split(" ").some((word) => expanded.some((stem) => word.startsWith(stem)))).toBe(
        true,
      );
    }
    expect(elapsed).toBeLessThan(200);
  });
});
