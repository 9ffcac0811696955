import { describe, expect, it } from "vitest";
import { chunkText } from "../../lib/knowledge/indexing/chunking.js";
import { TEXT_ATTACKS } from "./attacks.js";

/**
 * Found by the timed fuzz: a paragraph too long for one chunk is split into sentences with
 * `Intl.Segmenter`, and on Node 20 every sentence it yields carries its own copy of the whole
 * paragraph. Time and memory grow with the square of the sentences in one paragraph: 20,000 short
 * sentences (80 KB) took 15 s and 1.2 GB, 50,000 (200 KB) ran the process out of memory. A text
 * source of 40 KB, far within `MAX_TEXT_BYTES`, must chunk in a small part of a second: a linear
 * split takes 3 to 40 ms, the quadratic one 1.3 s and more.
 */

const SIZE = 1200;

describe("chunking one paragraph of many sentences", () => {
  it.each([
    ["a spaced script", TEXT_ATTACKS.sentences.build(10_000)],
    ["an unspaced script", TEXT_ATTACKS["unspaced-sentences"].build(5_000)],
  ])("splits 40 KB of short sentences in %s in under 250 ms", (_script, text) => {
    const started = performance.now();
    const chunks = chunkText(text, { size: SIZE, overlap: 200 });
    const ms = performance.now() - started;
    expect(ms, `${Math.round(ms)} ms`).toBeLessThan(250);
    // Cut at sentence ends, none over the size, the whole text kept.
    expect(chunks.every((c) => c.text.length <= SIZE)).toBe(true);
    expect(chunks.length).toBeGreaterThanOrEqual(Math.ceil(text.length / SIZE));
    expect(chunks.at(-1)?.text.endsWith(text.trim().slice(-8))).toBe(true);
  });
});

describe("chunking one paragraph with a sentence longer than the segmenter's window", () => {
  it("cuts 1 MB of words without a sentence end into chunk-sized pieces in linear time", () => {
    const text = "word ".repeat(200_000).trim();
    const started = performance.now();
    const chunks = chunkText(text, { size: SIZE, overlap: 0 });
    const ms = performance.now() - started;
    // Linear: 0.1 to 0.4 s; a window grown by a fixed step rather than doubled, 8 s.
    expect(ms, `${Math.round(ms)} ms`).toBeLessThan(1500);
    expect(chunks.every((c) => c.text.length <= SIZE)).toBe(true);
    expect(chunks.map((c) => c.text).join(" ")).toBe(text);
  });

  it("reads the short sentences after a 100 KB one at the cost of their own length", () => {
    const text = `${"word ".repeat(20_000)}end. ${"Aa. ".repeat(10_000)}`.trim();
    const started = performance.now();
    const chunks = chunkText(text, { size: SIZE, overlap: 0 });
    const ms = performance.now() - started;
    // Linear: 60 to 140 ms; segmenting all of the grown window's short sentences, 5 s.
    expect(ms, `${Math.round(ms)} ms`).toBeLessThan(500);
    expect(chunks.every((c) => c.text.length <= SIZE)).toBe(true);
    expect(chunks.map((c) => c.text).join(" ")).toBe(text);
  });
});
