import type { Retriever, SearchMode } from "./retrieval.js";

/**
 * How well search finds what answers a set of questions, each with the sources (or passages)
 * that answer it: recall@k, MRR and nDCG@10 for each way search can rank (lexical, hybrid,
 * reranked), side by side, so a change of chunking, model or filters shows in one number.
 */

export interface EvalQuestion {
  question: string;
  /** The sources whose passages answer it: any passage of one counts. */
  source_ids?: string[] | undefined;
  /** Or the passages themselves. */
  passages?: Array<{ source_id: string; chunk_index: number }> | undefined;
}

export interface ModeScores {
  recall_at_k: number;
  mrr: number;
  ndcg_at_10: number;
}

export const EVAL_MODES = ["lexical", "hybrid", "reranked"] as const;
export type EvalMode = (typeof EVAL_MODES)[number];

export interface EvalReport {
  k: number;
  questions: number;
  /** Null for a mode the configuration does not offer (no embedding model, no reranker). */
  modes: Record<EvalMode, ModeScores | null>;
}

const NDCG_DEPTH = 10;

/** What counts as one relevant item of a hit: its source, or its passage. */
const itemOf = (question: EvalQuestion, hit: { source_id: string; chunk_index: number }) =>
  question.passages ? `${hit.source_id}#${hit.chunk_index}` : hit.source_id;

function relevantItems(question: EvalQuestion): Set<string> {
  return new Set(
    question.passages
      ? question.passages.map((p) => `${p.source_id}#${p.chunk_index}`)
      : (question.source_ids ?? []),
  );
}

/**
 * One question's scores from its ranked hits. A relevant item counts once, where it first
 * appears (a source's second passage adds nothing), so every score is at most 1.
 */
export function scoreRanking(
  relevant: Set<string>,
  ranked: readonly string[],
  k: number,
): ModeScores {
  const seen = new Set<string>();
  let found = 0;
  let reciprocal = 0;
  let dcg = 0;
  for (const [i, item] of ranked.entries()) {
    if (!relevant.has(item) || seen.has(item)) continue;
    seen.add(item);
    if (i < k) found++;
    if (reciprocal === 0) reciprocal = 1 / (i + 1);
    if (i < NDCG_DEPTH) dcg += 1 / Math.log2(i + 2);
  }
  let ideal = 0;
  for (let i = 0; i < Math.min(relevant.size, NDCG_DEPTH); i++) ideal += 1 / Math.log2(i + 2);
  return {
    recall_at_k: relevant.size === 0 ? 0 : found / relevant.size,
    mrr: reciprocal,
    ndcg_at_10: ideal === 0 ? 0 : dcg / ideal,
  };
}

const MODES: Record<EvalMode, SearchMode> = {
  lexical: { lexical: true, rerank: false },
  hybrid: { rerank: false },
  reranked: {},
};

const round = (n: number) => Math.round(n * 1e4) / 1e4;

/**
 * Runs every question in every mode the retriever offers and averages the scores. Questions run
 * one after another: an evaluation must not crowd out live searches.
 */
export async function evaluate(
  retriever: Retriever,
  workspaceId: string,
  questions: readonly EvalQuestion[],
  k: number,
): Promise<EvalReport> {
  const available = { lexical: true, ...retriever.offers() };
  const depth = Math.max(k, NDCG_DEPTH);
  const modes = {} as Record<EvalMode, ModeScores | null>;
  for (const mode of EVAL_MODES) {
    if (!available[mode]) {
      modes[mode] = null;
      continue;
    }
    const total: ModeScores = { recall_at_k: 0, mrr: 0, ndcg_at_10: 0 };
    for (const question of questions) {
      const { results } = await retriever.retrieve(
        workspaceId,
        question.question,
        depth,
        {},
        MODES[mode],
      );
      const ranked = results.map((hit) => itemOf(question, hit));
      const scores = scoreRanking(relevantItems(question), ranked, k);
      total.recall_at_k += scores.recall_at_k;
      total.mrr += scores.mrr;
      total.ndcg_at_10 += scores.ndcg_at_10;
    }
    const n = Math.max(questions.length, 1);
    modes[mode] = {
      recall_at_k: round(total.recall_at_k / n),
      mrr: round(total.mrr / n),
      ndcg_at_10: round(total.ndcg_at_10 / n),
    };
  }
  return { k, questions: questions.length, modes };
}
