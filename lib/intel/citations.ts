import { passageUrl } from "../knowledge/retrieval/citation-spans.js";
import type { SearchResult } from "../knowledge/retrieval/retrieval.js";

export interface Citation {
  source_id: string;
  source_url_or_path: string | null;
  name: string;
  /** A sentence taken verbatim from the cited passage. */
  quote: string;
  /** The quoted sentence's span in the source's extracted text; null for older indexes. */
  char_start: number | null;
  char_end: number | null;
  page: number | null;
  heading_path: string[];
  /** Web pages: the page's URL opening at the quoted sentence (a text fragment). */
  url: string | null;
}

/** `[2]` or `[1, 3]`: how the model cites passages. */
const MARKER = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
/** The start of a marker whose end has not arrived yet. */
const OPEN_MARKER = /^\[[\d,\s]{0,20}$/;

/**
 * Where the end of a streamed text that may still become a marker starts, with the space before
 * it. Found without a regular expression: `\s*…$` takes quadratic time on a long run of spaces.
 */
function heldFrom(text: string): number {
  const open = text.lastIndexOf("[");
  const end = open >= 0 && OPEN_MARKER.test(text.slice(open)) ? open : text.length;
  return text.slice(0, end).trimEnd().length;
}

/**
 * Turns the model's passage numbers into citation numbers, on streamed text as on whole text.
 * `[n]` names the n-th passage given to the model; it becomes `[k]`, the k-th entry of the
 * answer's `citations`, numbered in order of first use. Numbers of passages that were not given
 * are removed, so a citation can only point at a chunk the model actually saw. A marker split
 * across deltas, and trailing space that may precede one, is held back until it is whole.
 */
export class CitationMarkers {
  /** Passage numbers (1-based) in citation order. */
  readonly cited: number[] = [];
  private pending = "";

  constructor(private readonly passages: number) {}

  push(delta: string): string {
    const text = this.pending + delta;
    const hold = heldFrom(text);
    this.pending = text.slice(hold);
    return this.rewrite(text.slice(0, hold));
  }

  flush(): string {
    const rest = this.rewrite(this.pending);
    this.pending = "";
    return rest;
  }

  private rewrite(text: string): string {
    let rewritten = "";
    let done = 0;
    for (const { 0: marker, 1: list = "", index } of text.matchAll(MARKER)) {
      const before = text.slice(done, index);
      done = index + marker.length;
      const numbers = list
        .split(",")
        .map(Number)
        .filter((n) => n >= 1 && n <= this.passages)
        .map((n) => {
          if (!this.cited.includes(n)) this.cited.push(n);
          return this.cited.indexOf(n) + 1;
        });
      // A dropped marker takes the space before it along: "costs $5 [9]." reads "costs $5."
      rewritten +=
        numbers.length > 0 ? `${before}[${[...new Set(numbers)].join(", ")}]` : before.trimEnd();
    }
    return rewritten + text.slice(done);
  }
}

const words = (text: string) =>
  new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length > 2));

const sentenceSegmenter = new Intl.Segmenter("en", { granularity: "sentence" });

const MAX_QUOTE = 300;

function shorten(text: string): string {
  if (text.length <= MAX_QUOTE) return text;
  const cut = text.lastIndexOf(" ", MAX_QUOTE - 1);
  return `${text.slice(0, cut > MAX_QUOTE / 2 ? cut : MAX_QUOTE - 1)}…`;
}

/** A sentence of a passage and where it lies in it. */
interface Sentence {
  text: string;
  start: number;
  end: number;
}

/** The passage sentence sharing the most words with the claim, with its place in the passage. */
function bestSentence(passage: string, claim: string): Sentence {
  const claimWords = words(claim);
  let best: Sentence = { text: "", start: 0, end: 0 };
  let bestScore = -1;
  for (const { segment, index } of sentenceSegmenter.segment(passage)) {
    const trimmed = segment.trim();
    if (!trimmed) continue;
    let score = 0;
    for (const word of words(trimmed)) if (claimWords.has(word)) score++;
    if (score > bestScore) {
      const start = index + segment.indexOf(trimmed);
      best = { text: trimmed, start, end: start + trimmed.length };
      bestScore = score;
    }
  }
  return best;
}

/**
 * The passage sentence sharing the most words with the claim that cites it. Quotes are taken
 * from the passage, never from the model, so a quote is always real text of the cited source.
 */
export function supportingQuote(passage: string, claim: string): string {
  return shorten(bestSentence(passage, claim).text.replace(/\s+/g, " "));
}

/** The text just before citation `k`'s first marker in the answer: the claim it supports. */
function claimFor(answer: string, k: number): string {
  for (const match of answer.matchAll(MARKER)) {
    if ((match[1] ?? "").split(",").map(Number).includes(k)) {
      return answer.slice(Math.max(0, match.index - 400), match.index);
    }
  }
  return answer;
}

/** The answer's citations, in the order its (rewritten) markers number them. */
export function citationsFor(
  cited: number[],
  passages: SearchResult[],
  answer: string,
): Citation[] {
  return cited.flatMap((n, i) => {
    const passage = passages[n - 1];
    if (!passage) return [];
    const sentence = bestSentence(passage.text, claimFor(answer, i + 1));
    const at = passage.char_start;
    return [
      {
        source_id: passage.source_id,
        source_url_or_path: passage.source_url_or_path,
        name: passage.name,
        quote: shorten(sentence.text.replace(/\s+/g, " ")),
        char_start: at === null ? null : at + sentence.start,
        char_end: at === null ? null : at + sentence.end,
        page: passage.page,
        heading_path: passage.heading_path,
        url:
          passage.url === null || passage.source_url_or_path === null
            ? null
            : passageUrl(passage.source_url_or_path, sentence.text),
      },
    ];
  });
}
