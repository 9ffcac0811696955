import { describe, expect, it } from "vitest";
import {
  BM25_HALF,
  fuse,
  lexicalScore,
  type Ranked,
  vectorScore,
} from "../../lib/search/scores.js";
import { contentTerms } from "../../lib/search/terms.js";

const ranked = (...ids: string[]): Ranked[] => ids.map((id, i) => ({ id, score: 0.9 - i * 0.05 }));
const options = { limit: 10, protectedLexical: 3, rrfK: 60 };
const order = (hits: Array<{ id: string }>) => hits.map((hit) => hit.id);

describe("scores", () => {
  it("map BM25 monotonically onto 0-1, half at BM25_HALF", () => {
    expect(lexicalScore(0)).toBe(0);
    expect(lexicalScore(BM25_HALF)).toBe(0.5);
    expect(lexicalScore(1)).toBeLessThan(lexicalScore(6));
    expect(lexicalScore(1e6)).toBeLessThan(1);
  });

  it("read cosine distance as similarity, clipped to 0-1", () => {
    expect(vectorScore(0)).toBe(1);
    expect(vectorScore(0.25)).toBe(0.75);
    expect(vectorScore(1.5)).toBe(0);
  });
});

describe("fuse", () => {
  it("keeps the protected lexical hits on top, in order, whatever the vector side ranks", () => {
    const fused = fuse(ranked("a", "b", "c", "d"), ranked("x", "y", "c", "z"), options);
    expect(order(fused).slice(0, 3)).toEqual(["a", "b", "c"]);
  });

  it("fuses the rest by reciprocal rank: what both find rises, ties go to lexical", () => {
    const fused = fuse(ranked("a", "b", "c", "d", "e", "f"), ranked("f", "x", "y"), options);
    // Below the head the lists go on as d, e, f and f, x, y. f is on both (1/63 + 1/61); d earns
    // 1/61; e and x 1/62 each, e (lexical) first; y 1/63.
    expect(order(fused)).toEqual(["a", "b", "c", "f", "d", "e", "x", "y"]);
  });

  it("lets vector hits fill in when lexical found fewer than the protected number", () => {
    expect(order(fuse(ranked("a"), ranked("x", "a", "y"), options))).toEqual(["a", "x", "y"]);
    expect(order(fuse([], ranked("x", "y"), options))).toEqual(["x", "y"]);
  });

  it("cuts at the limit and never lets a score rise down the list", () => {
    const lexical = [
      { id: "a", score: 0.4 },
      { id: "b", score: 0.3 },
    ];
    const vector = [{ id: "x", score: 0.95 }];
    const fused = fuse(lexical, vector, { ...options, protectedLexical: 2, limit: 3 });
    expect(fused).toEqual([
      { id: "a", score: 0.4 },
      { id: "b", score: 0.3 },
      { id: "x", score: 0.3 },
    ]);
  });

  it("scores a hit found by both by the stronger of its two scores", () => {
    const fused = fuse([{ id: "a", score: 0.2 }], [{ id: "a", score: 0.8 }], options);
    expect(fused).toEqual([{ id: "a", score: 0.8 }]);
  });

  it("fuse the lexical side on content words only: function words are no evidence", () => {
    expect(contentTerms(["can", "it", "sync", "with", "our", "crm"])).toEqual(["sync", "crm"]);
    expect(contentTerms(["what", "is", "it"])).toEqual(["what", "is", "it"]);
  });
});
