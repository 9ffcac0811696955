/**
 * The index's own tokenizer. Text is split into words here, in JavaScript, and the engine indexes
 * the words joined by spaces with its whitespace tokenizer: its built-in tokenizers split on
 * punctuation and whitespace only, so a sentence of Chinese, Japanese or Thai would be one token
 * and none of its words could be found. Queries are split by the same function, so a query word
 * and an indexed word are always the same string.
 */

const wordSegmenter = new Intl.Segmenter("und", { granularity: "word" });
/** Scripts written without spaces between words, which need a dictionary to split. */
const UNSPACED =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
const WORD = /[\p{L}\p{M}\p{N}_]+(?:['’.][\p{L}\p{M}\p{N}_]+)*/gu;

/**
 * Words by Unicode rules. Text without unspaced scripts takes a regular expression that finds the
 * same words many times faster than the segmenter, which matters when a large source is indexed.
 */
export function tokenize(text: string): string[] {
  if (!UNSPACED.test(text)) return text.match(WORD) ?? [];
  const words: string[] = [];
  for (const { segment, isWordLike } of wordSegmenter.segment(text)) {
    if (isWordLike) words.push(segment);
  }
  return words;
}

/** A word as the index holds it and a query looks it up. */
const termOf = (word: string) => word.toLocaleLowerCase();

/** What the index stores for a text: its terms separated by single spaces. */
export function indexedTerms(text: string | null): string {
  return text ? tokenize(text).map(termOf).join(" ") : "";
}

/**
 * Distinct terms a search looks up, at most this many: repeated words count once and words past
 * the cap are dropped, so no query can make one search cost more than this many term lookups
 * (a 2,000-character query of 400 repeated words once blocked a process for seconds).
 */
export const MAX_QUERY_TERMS = 32;

/** A query's distinct terms, in order, at most `MAX_QUERY_TERMS`. */
export function queryTerms(text: string): string[] {
  const distinct = new Set<string>();
  for (const word of tokenize(text)) {
    if (distinct.size === MAX_QUERY_TERMS) break;
    distinct.add(termOf(word));
  }
  return [...distinct];
}

/** Longest query the search API accepts, in characters. */
export const MAX_QUERY_LENGTH = 2000;

/**
 * English function words: they carry no topic, so a chunk that shares only them with a query is
 * not a match worth protecting in hybrid search (lexical search alone keeps them, as before).
 */
const FUNCTION_WORDS = new Set(
  (
    "a about after all also am an and any are as at be been but by can could did do does for " +
    "from had has have he her his how i if in into is it its me my no not of on or our out so " +
    "some than that the their them then there these they this to up us was we were what when " +
    "where which who why will with would you your"
  ).split(" "),
);

/** A query's terms without function words; all of them when nothing else is left. */
export function contentTerms(terms: string[]): string[] {
  const content = terms.filter((term) => !FUNCTION_WORDS.has(term));
  return content.length > 0 ? content : terms;
}
