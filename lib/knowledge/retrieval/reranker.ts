import { z } from "zod";

/**
 * A second-stage model that reorders search's first candidates: `POST {baseUrl}/rerank` in the
 * request shape vLLM, TEI, Jina, Cohere and most OpenAI-compatible servers share (`model`,
 * `query`, `documents`, `top_n`), answered with `results[{index, relevance_score}]`. The endpoint
 * is the operator's configuration (`RERANK_BASE_URL`), like `OPENAI_BASE_URL`, never a user's: it
 * is called as the model provider is, directly, and may well be a private address.
 */

export interface RerankSettings {
  model: string;
  /** The server's API root; `/rerank` is appended. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** The whole call's budget: past it, search answers from the first stage. */
  timeoutMs: number;
  /** First-stage candidates sent to be reordered (at least the page asked for). */
  candidates: number;
}

const Answer = z.object({
  results: z
    .array(z.object({ index: z.number().int().min(0), relevance_score: z.number() }))
    .max(1000),
});

export interface Reranked {
  /** Index into the documents given. */
  index: number;
  score: number;
}

/** Why reranking did not happen; search says so in `rerank_error` and keeps its first order. */
export class RerankError extends Error {
  override name = "RerankError";
}

/** Makes the signal that ends a call after its budget (tests pass one they abort by hand). */
export type Timer = (ms: number) => AbortSignal;

export class Reranker {
  constructor(
    readonly settings: RerankSettings,
    private readonly timer: Timer = (ms) => AbortSignal.timeout(ms),
  ) {}

  /**
   * The documents' indexes, best first, with the model's scores. Throws `RerankError` when the
   * server fails, answers something else, or does not answer within the budget.
   */
  async rerank(query: string, documents: readonly string[], topN: number): Promise<Reranked[]> {
    const { model, baseUrl, apiKey, timeoutMs } = this.settings;
    const deadline = this.timer(timeoutMs);
    let response: Response;
    let body: unknown;
    try {
      response = await fetch(`${baseUrl.replace(/\/+$/, "")}/rerank`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        },
        body: JSON.stringify({ model, query, documents, top_n: topN }),
        signal: deadline,
      });
      body = await response.json().catch(() => undefined);
    } catch (err) {
      if (deadline.aborted) throw new RerankError(`The reranker took longer than ${timeoutMs} ms`);
      throw new RerankError(`The reranker could not be reached: ${(err as Error).message}`);
    }
    if (!response.ok) throw new RerankError(`The reranker answered HTTP ${response.status}`);
    const parsed = Answer.safeParse(body);
    if (!parsed.success) throw new RerankError("The reranker's answer is not a list of results");
    const seen = new Set<number>();
    const ranked: Reranked[] = [];
    for (const { index, relevance_score } of parsed.data.results) {
      // An index outside the documents, or given twice, would name a passage nobody sent.
      if (index >= documents.length || seen.has(index)) continue;
      seen.add(index);
      ranked.push({ index, score: relevance_score });
    }
    return ranked.sort((a, b) => b.score - a.score);
  }
}
