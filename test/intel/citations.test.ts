import { describe, expect, it } from "vitest";
import { CitationMarkers, citationsFor, supportingQuote } from "../../lib/intel/citations.js";
import type { SearchResult } from "../../lib/knowledge/retrieval/retrieval.js";

/** Feeds text to the markers in pieces of `size` characters, as a stream would. */
function streamed(markers: CitationMarkers, text: string, size: number): string {
  let out = "";
  for (let i = 0; i < text.length; i += size) out += markers.push(text.slice(i, i + size));
  return out + markers.flush();
}

describe("CitationMarkers", () => {
  it("renumbers passages in order of first citation and drops ones never given", () => {
    const markers = new CitationMarkers(3);
    expect(streamed(markers, "A [3]. B [1, 3]. C [4]. D [0] and [2][2].", 100)).toBe(
      "A [1]. B [2, 1]. C. D and [3][3].",
    );
    expect(markers.cited).toEqual([3, 1, 2]);
  });

  it("gives the same text however the stream is cut", () => {
    const text =
      "Plans start at $29 [2]. Security is SOC 2 [1, 2]. Unknown [12]. Arrays like a[0] stay.";
    const whole = new CitationMarkers(2);
    const expected = streamed(whole, text, text.length);
    for (const size of [1, 2, 3, 5, 8]) {
      expect(streamed(new CitationMarkers(2), text, size)).toBe(expected);
    }
    expect(expected).toBe(
      "Plans start at $29 [1]. Security is SOC 2 [2, 1]. Unknown. Arrays like a stay.",
    );
  });

  it("cites nothing when no passage was given", () => {
    const markers = new CitationMarkers(0);
    expect(streamed(markers, "Nothing here [1].", 4)).toBe("Nothing here.");
    expect(markers.cited).toEqual([]);
  });
});

describe("quotes", () => {
  const passage =
    "Acme was founded in 2015. The Team plan costs $99 per month. Annual billing saves 20 percent.";

  it("quote the passage sentence closest to the claim that cites it", () => {
    expect(supportingQuote(passage, "Annual billing gives a 20 percent saving")).toBe(
      "Annual billing saves 20 percent.",
    );
    expect(supportingQuote(passage, "The Team plan is $99 a month")).toBe(
      "The Team plan costs $99 per month.",
    );
  });

  it("are shortened at a word boundary", () => {
    const quote = supportingQuote(`${"word ".repeat(100)}end.`, "word");
    expect(quote.length).toBeLessThanOrEqual(300);
    expect(quote.endsWith("word…")).toBe(true);
  });

  it("come from the cited chunk, whichever order citations take", () => {
    const result = (id: string, text: string): SearchResult => ({
      source_id: id,
      chunk_index: 0,
      text,
      score: 1,
      source_url_or_path: `https://example.com/${id}`,
      name: id,
      heading: null,
      page: null,
      char_start: null,
      char_end: null,
      heading_path: [],
      url: null,
    });
    const passages = [result("a", "Alpha is first."), result("b", passage)];
    const citations = citationsFor([2, 1], passages, "Team costs $99 [1]. Alpha [2].");
    expect(citations).toEqual([
      {
        source_id: "b",
        source_url_or_path: "https://example.com/b",
        name: "b",
        quote: "The Team plan costs $99 per month.",
        char_start: null,
        char_end: null,
        page: null,
        heading_path: [],
        url: null,
      },
      {
        source_id: "a",
        source_url_or_path: "https://example.com/a",
        name: "a",
        quote: "Alpha is first.",
        char_start: null,
        char_end: null,
        page: null,
        heading_path: [],
        url: null,
      },
    ]);
  });
});
