/**
 * Deterministic English-like text for the figures: a fixed vocabulary drawn with Zipf's law, so
 * term frequencies look like real prose to BM25 (a few very common words, a long tail of rare
 * ones) and every run indexes and searches exactly the same text.
 */

/** mulberry32: a tiny seeded PRNG; `Math.random` would make runs incomparable. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMMON =
  "the of and to a in for is on that with as our by it from at your are this be we or an can more pricing plan team customers product marketing brand content campaign growth sales data platform teams".split(
    " ",
  );
const SYLLABLES =
  "ka lo mi ne ru sa ti vo be da fe gi ho ju ko la ma no pe qui ra se to vu wa xe yo ze".split(" ");
const VOCABULARY_SIZE = 20_000;

function buildVocabulary(): string[] {
  const random = prng(7);
  const words = new Set(COMMON);
  while (words.size < VOCABULARY_SIZE) {
    const length = 2 + Math.floor(random() * 3);
    let word = "";
    for (let i = 0; i < length; i++) word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    words.add(word);
  }
  return [...words];
}

const vocabulary = buildVocabulary();
/** Cumulative Zipf weights (exponent 1), for drawing a rank by binary search. */
const cumulative = (() => {
  let total = 0;
  return vocabulary.map((_, rank) => {
    total += 1 / (rank + 1);
    return total;
  });
})();

export class Corpus {
  private readonly random: () => number;

  constructor(seed: number) {
    this.random = prng(seed);
  }

  private int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }

  /** A word by Zipf rank, optionally only from ranks at or above `minRank`. */
  word(minRank = 0): string {
    const total = cumulative.at(-1) as number;
    const floor = minRank > 0 ? (cumulative[minRank - 1] as number) : 0;
    const target = floor + this.random() * (total - floor);
    let low = minRank;
    let high = cumulative.length - 1;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((cumulative[mid] as number) < target) low = mid + 1;
      else high = mid;
    }
    return vocabulary[low] as string;
  }

  sentence(): string {
    const words = Array.from({ length: this.int(6, 18) }, () => this.word());
    const first = words[0] ?? "";
    words[0] = first.charAt(0).toUpperCase() + first.slice(1);
    return `${words.join(" ")}.`;
  }

  /** Whole sentences up to about `chars` characters. */
  paragraph(chars: number): string {
    const sentences: string[] = [];
    let length = 0;
    while (length < chars) {
      const sentence = this.sentence();
      sentences.push(sentence);
      length += sentence.length + 1;
    }
    return sentences.join(" ");
  }

  heading(): string {
    return Array.from({ length: this.int(2, 4) }, () => this.word(30)).join(" ");
  }

  /** A Markdown document of exactly `bytes` ASCII characters: a title, sections, paragraphs. */
  document(bytes: number): string {
    const parts = [`# ${this.heading()}`];
    let length = parts[0]?.length ?? 0;
    while (length < bytes) {
      const part =
        this.random() < 0.15 ? `## ${this.heading()}` : this.paragraph(this.int(200, 900));
      parts.push(part);
      length += part.length + 2;
    }
    return parts.join("\n\n").slice(0, bytes);
  }

  /** A search query: one fairly common content word and one or two rarer ones. */
  query(): string {
    const words = [this.word(30), this.word(200)];
    if (this.random() < 0.5) words.push(this.word(1000));
    return words.join(" ");
  }
}
