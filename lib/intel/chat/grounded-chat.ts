import type { FilterExpression } from "../../knowledge/retrieval/filter-expression.js";
import type { Retriever, SearchResult } from "../../knowledge/retrieval/retrieval.js";
import type { Quotas } from "../../limits/quotas.js";
import type { ChatMessage, LlmClient } from "../../llm/client.js";
import { llmUnavailable } from "../../llm/errors.js";
import type { BrandProfile, BrandProfiles } from "../brand/profiles.js";
import { type Citation, CitationMarkers, citationsFor } from "../citations.js";
import {
  brandSection,
  type ContextBudget,
  fitPassages,
  PromptData,
  passagesSection,
} from "../prompts.js";

export interface ChatTurn {
  role: "user" | "assistant";
  content: string;
}

export interface ChatRequest {
  message: string;
  history?: ChatTurn[] | undefined;
  /** Grounds the answer in these sources only. */
  sourceIds?: string[] | undefined;
  /** Grounds the answer in the sources matching this only. */
  filters?: FilterExpression | undefined;
}

export interface ChatAnswer {
  answer: string;
  citations: Citation[];
}

export type ChatEvent = { type: "delta"; text: string } | { type: "done"; answer: ChatAnswer };

export interface ChatDeps {
  retriever: Retriever;
  brands: BrandProfiles;
  llm: LlmClient;
  /** Each answer the model writes is one of the workspace's daily model calls. */
  quotas: Quotas;
}

export interface ChatOptions {
  context?: ContextBudget;
  /** Characters of earlier turns kept (the most recent ones). */
  historyChars?: number;
  /** Output tokens of one answer. */
  maxTokens?: number;
}

/**
 * What chat says when no passage of an enabled source supports an answer (an empty knowledge
 * base, only disabled sources, nothing that matches): said plainly, without asking the model,
 * which could only guess.
 */
export const NOTHING_FOUND: ChatAnswer = {
  answer:
    "I found no passage in your knowledge base that supports an answer to this, so I won't guess. Add or enable a source that covers it, then ask again.",
  citations: [],
};

function systemPrompt(data: PromptData, brand: BrandProfile | undefined): string {
  return [
    `You answer questions for the marketing team of ${brand ? "the brand described in the brand profile" : "a company"}, using only its brand profile and its knowledge base passages.`,
    "",
    "## Answering",
    "- Ground every statement in the brand profile or the passages. If they do not contain the answer, say plainly that the knowledge base has nothing on it, and do not guess or fill in from general knowledge.",
    "- After each statement drawn from a passage, cite the passage's number in square brackets, e.g. [2] or [1, 3]. Cite only the numbered passages given; the brand profile needs no citation.",
    "- Be concise and concrete. Write in the brand's tone of voice when the profile gives one.",
    "",
    data.rules(),
  ].join("\n");
}

/** The most recent turns that fit the budget, oldest first. */
function recentHistory(history: ChatTurn[], chars: number): ChatMessage[] {
  const kept: ChatMessage[] = [];
  let used = 0;
  for (const turn of [...history].reverse()) {
    used += turn.content.length;
    if (used > chars) break;
    kept.unshift({ role: turn.role, content: turn.content });
  }
  return kept;
}

interface Prepared {
  messages: ChatMessage[];
  passages: SearchResult[];
}

/**
 * Chat grounded in a workspace's brand profile and enabled sources. Passages are numbered data
 * blocks in the prompt and the model cites them by number; the numbers are mapped back to the
 * passages given, so a citation can only name a chunk the model saw, with a quote taken from it.
 */
export class GroundedChat {
  private readonly context: ContextBudget;
  private readonly historyChars: number;
  private readonly maxTokens: number;

  constructor(
    private readonly deps: ChatDeps,
    options: ChatOptions = {},
  ) {
    this.context = options.context ?? { passages: 8, chars: 12_000 };
    this.historyChars = options.historyChars ?? 12_000;
    this.maxTokens = options.maxTokens ?? 1000;
  }

  async answer(workspaceId: string, request: ChatRequest): Promise<ChatAnswer> {
    const prepared = await this.prepare(workspaceId, request);
    if (!prepared) return NOTHING_FOUND;
    const { text } = await this.deps.llm.complete(prepared.messages, {
      operation: "chat",
      maxTokens: this.maxTokens,
    });
    const markers = new CitationMarkers(prepared.passages.length);
    const answer = (markers.push(text) + markers.flush()).trim();
    return { answer, citations: citationsFor(markers.cited, prepared.passages, answer) };
  }

  /**
   * The answer as events: text deltas, then `done` with the whole answer and its citations.
   * Resolves once the model has accepted the request, so an unavailable model is still an
   * ordinary error response; failures after that are thrown by the iterator.
   */
  async stream(
    workspaceId: string,
    request: ChatRequest,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<ChatEvent>> {
    const prepared = await this.prepare(workspaceId, request);
    if (!prepared) return single(NOTHING_FOUND);
    const deltas = await this.deps.llm.stream(prepared.messages, {
      operation: "chat.stream",
      maxTokens: this.maxTokens,
      ...(signal ? { signal } : {}),
    });
    return events(deltas, prepared.passages);
  }

  /** The prompt, or undefined when no passage can ground an answer. */
  private async prepare(workspaceId: string, request: ChatRequest): Promise<Prepared | undefined> {
    if (!this.deps.llm.available) throw llmUnavailable();
    const history = request.history ?? [];
    // A follow-up ("and for teams?") is searched together with the question before it, its own
    // words first, since a query keeps only its first words (see lib/search/terms.ts).
    const previous = history.findLast((turn) => turn.role === "user")?.content;
    const query = previous ? `${request.message}\n${previous}` : request.message;
    const scope = { source_ids: request.sourceIds, filters: request.filters };
    const [brand, results] = await Promise.all([
      this.deps.brands.get(workspaceId),
      this.deps.retriever.search(workspaceId, query, this.context.passages, scope),
    ]);
    const passages = fitPassages(results, this.context);
    if (passages.length === 0) return undefined;
    await this.deps.quotas.consume(workspaceId, "model_calls");
    const data = new PromptData();
    const messages: ChatMessage[] = [
      { role: "system", content: systemPrompt(data, brand) },
      ...recentHistory(history, this.historyChars),
      {
        role: "user",
        content: [
          brandSection(data, brand),
          passagesSection(data, passages),
          `Question:\n${request.message}`,
        ].join("\n\n"),
      },
    ];
    return { messages, passages };
  }
}

async function* single(answer: ChatAnswer): AsyncGenerator<ChatEvent> {
  yield { type: "delta", text: answer.answer };
  yield { type: "done", answer };
}

async function* events(
  deltas: AsyncIterable<string>,
  passages: SearchResult[],
): AsyncGenerator<ChatEvent> {
  const markers = new CitationMarkers(passages.length);
  let answer = "";
  for await (const delta of deltas) {
    const text = markers.push(delta);
    if (text) {
      answer += text;
      yield { type: "delta", text };
    }
  }
  const rest = markers.flush();
  if (rest) {
    answer += rest;
    yield { type: "delta", text: rest };
  }
  answer = answer.trim();
  yield {
    type: "done",
    answer: { answer, citations: citationsFor(markers.cited, passages, answer) },
  };
}
