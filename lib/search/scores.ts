/**
 * Scores on one 0–1 scale for both search modes, and the rule that fuses a lexical and a vector
 * ranking.
 *
 * Lexical: BM25 `s` becomes `s / (s + BM25_HALF)`. The map is monotonic, so the ranking is BM25's
 * own; it needs nothing but the hit itself, so a score means the same whatever else the query
 * found (a score relative to the top hit would call the best of several poor matches 1.0); and a
 * match on one distinctive word of a large corpus (BM25 about 4 to 8) lands between 0.65 and 0.8,
 * a match on common words alone (BM25 well under 1) below 0.3. Vector: cosine similarity, clipped
 * at 0. Both read as "how strongly this chunk matches": 0 not at all, towards 1 strongly.
 */

/** The BM25 score that maps to 0.5. */
export const BM25_HALF = 2;

export const lexicalScore = (bm25: number) => (bm25 > 0 ? bm25 / (bm25 + BM25_HALF) : 0);

/** Cosine similarity from the engine's cosine distance (1 - similarity), clipped to 0–1. */
export const vectorScore = (cosineDistance: number) => Math.min(1, Math.max(0, 1 - cosineDistance));

/** A hit of one ranking: its id and its score on the 0–1 scale, best first. */
export interface Ranked {
  id: string;
  score: number;
}

export interface FusionOptions {
  /** Results wanted. */
  limit: number;
  /** Lexical hits that keep their places at the top whatever the vector side says. */
  protectedLexical: number;
  /** Reciprocal rank fusion's constant for the rest (60 is the usual). */
  rrfK: number;
}

/**
 * Hybrid ranking with the lexical ranking as its backbone:
 *
 * 1. The first `protectedLexical` lexical hits take the first places, in lexical order. No vector
 *    evidence can move them or put anything above them, so hybrid's top `protectedLexical` is
 *    lexical's top `protectedLexical` whatever the embedding model: a weak model can never push
 *    a strong lexical match out (on a held-out set, reciprocal rank fusion of equals let a
 *    bag-of-words embedding drop a quarter of lexical's right answers out of the top 5).
 * 2. The rest of both rankings are fused below them by reciprocal rank fusion, each hit earning
 *    `1 / (rrfK + rank)` from each list it is on, ranks counted from where each list continues:
 *    a chunk both find rises, and a vector hit lexical missed enters at the place its vector
 *    rank earns. Ties go to lexical.
 *
 * A hit's score is the stronger of its lexical score and its vector similarity, capped at the
 * score above it, so scores never rise down the list.
 */
export function fuse(
  lexical: readonly Ranked[],
  vector: readonly Ranked[],
  options: FusionOptions,
) {
  const head = lexical.slice(0, options.protectedLexical);
  const placed = new Set(head.map((hit) => hit.id));
  const best = new Map<string, number>();
  for (const hit of [...lexical, ...vector]) {
    best.set(hit.id, Math.max(best.get(hit.id) ?? 0, hit.score));
  }
  const tail = new Map<string, { id: string; rrf: number; lexicalRank: number }>();
  const add = (hits: readonly Ranked[], isLexical: boolean) => {
    hits
      .filter((hit) => !placed.has(hit.id))
      .forEach((hit, i) => {
        const entry = tail.get(hit.id) ?? {
          id: hit.id,
          rrf: 0,
          lexicalRank: Number.MAX_SAFE_INTEGER,
        };
        entry.rrf += 1 / (options.rrfK + i + 1);
        if (isLexical) entry.lexicalRank = i;
        tail.set(hit.id, entry);
      });
  };
  add(lexical, true);
  add(vector, false);
  const fusedTail = [...tail.values()].sort(
    (a, b) => b.rrf - a.rrf || a.lexicalRank - b.lexicalRank,
  );
  let ceiling = 1;
  return [...head, ...fusedTail].slice(0, options.limit).map(({ id }) => {
    ceiling = Math.min(ceiling, best.get(id) ?? 0);
    return { id, score: ceiling };
  });
}
