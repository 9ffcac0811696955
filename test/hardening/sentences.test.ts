import { describe, expect, it, vi } from "vitest";
import { type ChunkingOptions, chunkText } from "../../lib/knowledge/indexing/chunking.js";
import { TEXT_ATTACKS } from "./attacks.js";

/**
 * Found by the timed fuzz: a paragraph too long for one chunk is split into sentences with
 * `Intl.Segmenter`, and on Node 20 every sentence it yields carries its own copy of the whole
 * paragraph. Time and memory grow with the square of the sentences in one paragraph: 20,000 short
 * sentences (80 KB) took 15 s and 1.2 GB, 50,000 (200 KB) ran the process out of memory. A text
 * source of 40 KB, far within `MAX_TEXT_BYTES`, must chunk in a small part of a second: a linear
 * split takes 3 to 40 ms, the quadratic one 1.3 s and more.
 *
 * The segmenter's work is counted, not timed, so the verdict is the same on a fast machine and a
 * loaded one: each call reads its input, and each segment it yields costs that whole input again.
 * Linear, the split costs the same per character of a text twice as long; quadratic, twice as much.
 */

const SIZE = 1200;
/** A text twice as long may cost this much more per character: linear, ~1.0; quadratic, 2. */
const LINEAR = 1.25;

/** The segmenter's work, per character of `text`, to chunk it. */
function costPerChar(text: string, options: ChunkingOptions): number {
  const segment = Intl.Segmenter.prototype.segment;
  let cost = 0;
  const counted = vi.spyOn(Intl.Segmenter.prototype, "segment").mockImplementation(function (
    this: Intl.Segmenter,
    input: string,
  ): Intl.Segments {
    const segments = segment.call(this, input);
    cost += input.length;
    return {
      containing: (index) => segments.containing(index),
      [Symbol.iterator]() {
        const iterator = segments[Symbol.iterator]();
        const next = iterator.next.bind(iterator);
        iterator.next = () => {
          const step = next();
          if (!step.done) cost += input.length;
          return step;
        };
        return iterator;
      },
    };
  });
  try {
    chunkText(text, options);
  } finally {
    counted.mockRestore();
  }
  return cost / text.length;
}

describe("chunking one paragraph of many sentences", () => {
  it.each([
    ["a spaced script", TEXT_ATTACKS.sentences.build, 10_000],
    ["an unspaced script", TEXT_ATTACKS["unspaced-sentences"].build, 5_000],
  ])("splits 40 KB of short sentences in %s in linear time", (_script, build, n) => {
    const text = build(n);
    const options = { size: SIZE, overlap: 200 };
    const chunks = chunkText(text, options);
    expect(costPerChar(text, options)).toBeLessThan(LINEAR * costPerChar(build(n / 2), options));
    // Cut at sentence ends, none over the size, the whole text kept.
    expect(chunks.every((c) => c.text.length <= SIZE)).toBe(true);
    expect(chunks.length).toBeGreaterThanOrEqual(Math.ceil(text.length / SIZE));
    expect(chunks.at(-1)?.text.endsWith(text.trim().slice(-8))).toBe(true);
  });
});

describe("chunking one paragraph with a sentence longer than the segmenter's window", () => {
  it("cuts 1 MB of words without a sentence end into chunk-sized pieces in linear time", () => {
    const words = (n: number) => "word ".repeat(n).trim();
    const text = words(200_000);
    const options = { size: SIZE, overlap: 0 };
    const chunks = chunkText(text, options);
    // Linear: 0.1 to 0.4 s; a window grown by a fixed step rather than doubled, 8 s.
    expect(costPerChar(text, options)).toBeLessThan(LINEAR * costPerChar(words(100_000), options));
    expect(chunks.every((c) => c.text.length <= SIZE)).toBe(true);
    expect(chunks.map((c) => c.text).join(" ")).toBe(text);
  });

  it("reads the short sentences after a 100 KB one at the cost of their own length", () => {
    const longThenShort = (n: number) => `${"word ".repeat(2 * n)}end. ${"Aa. ".repeat(n)}`.trim();
    const text = longThenShort(10_000);
    const options = { size: SIZE, overlap: 0 };
    const chunks = chunkText(text, options);
    // Linear: 60 to 140 ms; segmenting all of the grown window's short sentences, 5 s.
    const half = costPerChar(longThenShort(5_000), options);
    expect(costPerChar(text, options)).toBeLessThan(LINEAR * half);
    expect(chunks.every((c) => c.text.length <= SIZE)).toBe(true);
    expect(chunks.map((c) => c.text).join(" ")).toBe(text);
  });
});
