/**
 * The bounds on a search query, for whichever engine runs it: what one search costs must not grow
 * with what a client sends. A query of 400 words once meant 400 prefix expansions over the whole
 * index and blocked the process for seconds; now repeated words count once, words past the first
 * `MAX_QUERY_TERMS` distinct ones are dropped, and only the first `MAX_PREFIX_TERMS` long enough
 * also match longer words that start with them.
 */

/** Longest query the search API accepts, in characters. */
export const MAX_QUERY_LENGTH = 2000;
/** Distinct words a query searches for; words past them add cost, not relevance. */
export const MAX_QUERY_TERMS = 32;
/** Words that also match as the start of longer words (`integrat` finds `integration`). */
export const MAX_PREFIX_TERMS = 8;
/** Shorter words match only whole: as prefixes they would match much of the index. */
const MIN_PREFIX_LENGTH = 4;

/** A word as the term an index holds and a query looks up: lowercase; null for nothing. */
export function termOf(word: string): string | null {
  const term = word.toLocaleLowerCase();
  return term.length > 0 ? term : null;
}

/** A query as the terms an engine searches for. */
export interface QueryTerms {
  /** Distinct terms in query order, at most `MAX_QUERY_TERMS`. */
  terms: string[];
  /** Whether a term also matches the longer words it starts. */
  prefix: (term: string) => boolean;
}

/** The bounded terms of a query, split by the engine's own tokenizer (the one its index uses). */
export function queryTerms(query: string, tokenize: (text: string) => string[]): QueryTerms {
  const distinct = new Set<string>();
  for (const word of tokenize(query)) {
    if (distinct.size === MAX_QUERY_TERMS) break;
    const term = termOf(word);
    if (term) distinct.add(term);
  }
  const terms = [...distinct];
  const prefixed = new Set(
    terms.filter((term) => term.length >= MIN_PREFIX_LENGTH).slice(0, MAX_PREFIX_TERMS),
  );
  return { terms, prefix: (term) => prefixed.has(term) };
}
