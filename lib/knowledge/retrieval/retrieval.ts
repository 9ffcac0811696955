import type { Embedder } from "../../llm/embeddings.js";
import { logger } from "../../log.js";
import type { SearchHit, SearchIndex } from "../../search/index.js";
import { indexSpace } from "../indexing/embeddings.js";
import type { Passages } from "../indexing/passages.js";
import type { SourceItem, SourceType } from "../sources/sources.js";
import { headingPath, passageUrl } from "./citation-spans.js";
import { type FilterExpression, matchesFilter } from "./filter-expression.js";
import type { LiveSources, WorkspaceSources } from "./live-sources.js";
import { RerankError, type Reranker } from "./reranker.js";

export interface SearchResult {
  source_id: string;
  chunk_index: number;
  text: string;
  /** 0–1 in both modes (see `lib/search/scores.ts`); the reranker's score when it reordered. */
  score: number;
  source_url_or_path: string | null;
  name: string;
  heading: string | null;
  page: number | null;
  /** `text`'s span in the source's extracted text (`GET /api/knowledge/{id}/text`). */
  char_start: number | null;
  char_end: number | null;
  /** The headings above the passage, outermost first. */
  heading_path: string[];
  /** Web pages: the page's URL opening at the passage (a text fragment). */
  url: string | null;
}

/** Narrows a search to some sources; every list given narrows it, an absent one does not. */
export interface SearchScope {
  source_ids?: string[] | undefined;
  type?: SourceType[] | undefined;
  crawl_id?: string[] | undefined;
  /** Only sources whose attributes match (see `filter-expression.ts`). */
  filters?: FilterExpression | undefined;
}

/** How one search ranks: the default is the best the configuration offers. */
export interface SearchMode {
  /** Lexical only, even with an embedding model (evaluation compares the modes). */
  lexical?: boolean;
  /** False: no second stage, even with a reranker configured. */
  rerank?: boolean;
}

/** A search's results, and whether the reranker reordered them. */
export interface Retrieved {
  results: SearchResult[];
  /** Present when a reranker is configured: false when it failed and the first stage answered. */
  reranked?: boolean;
  rerank_error?: string;
}

/** Finds the chunks of a workspace's enabled, indexed sources that best answer a query. */
export interface Retriever {
  search(
    workspaceId: string,
    query: string,
    limit: number,
    scope?: SearchScope,
  ): Promise<SearchResult[]>;
  /** `search` with a choice of ranking, saying whether the reranker reordered the results. */
  retrieve(
    workspaceId: string,
    query: string,
    limit: number,
    scope?: SearchScope,
    mode?: SearchMode,
  ): Promise<Retrieved>;
  /** The rankings beside lexical that the configuration offers. */
  offers(): { hybrid: boolean; reranked: boolean };
}

/**
 * Rows of a source deleted a moment ago stay in the index until the index worker removes them;
 * a few more hits than asked for are taken so that dropping them never leaves a short page.
 */
const SLACK = 10;

export interface IndexRetrieverDeps {
  index: SearchIndex;
  live: LiveSources;
  /** Without one (no key or no EMBEDDING_MODEL), search is lexical. */
  embedder?: Embedder | undefined;
  /** Places each hit in its source's text; without it (benchmarks of ranking) spans are null. */
  passages?: Passages | undefined;
  /** Reorders the first candidates when RERANK_MODEL is set. */
  reranker?: Reranker | undefined;
}

/**
 * Search over the persisted index (`lib/search`), kept current by the index worker. What may be
 * returned is decided here, on every search, from the table: the workspace's sources that exist
 * but are not enabled and indexed are excluded inside the engine (before its top-k cut), so a
 * disable or enable shows on the very next search without touching the index. A filter
 * expression is evaluated over the same source records and narrows the search to the sources it
 * matches, inside the engine too, so a filter matching a few sources still gets their best
 * passages. The workspace's counter read with them tells the index when to look for its newest
 * version (a source indexed since), so a search that finds no change costs no listing of the
 * store. With an embedding model the search is hybrid; when embedding the query fails, it answers
 * lexically. With a reranker the first candidates are reordered by it; when it fails, the first
 * order stands and the answer says so.
 */
export class IndexRetriever implements Retriever {
  constructor(
    private readonly deps: IndexRetrieverDeps,
    private readonly options: { queryTimeoutMs?: number } = {},
  ) {}

  offers(): { hybrid: boolean; reranked: boolean } {
    return { hybrid: this.deps.embedder !== undefined, reranked: this.deps.reranker !== undefined };
  }

  async search(
    workspaceId: string,
    query: string,
    limit: number,
    scope: SearchScope = {},
  ): Promise<SearchResult[]> {
    return (await this.retrieve(workspaceId, query, limit, scope)).results;
  }

  async retrieve(
    workspaceId: string,
    query: string,
    limit: number,
    scope: SearchScope = {},
    mode: SearchMode = {},
  ): Promise<Retrieved> {
    const { reranker } = this.deps;
    const rerank = reranker !== undefined && mode.rerank !== false;
    const [sources, vector, scoped] = await Promise.all([
      this.deps.live.of(workspaceId),
      mode.lexical ? undefined : this.embed(workspaceId, query),
      this.scopedSources(workspaceId, scope),
    ]);
    const live = new Map(sources.live.map((source) => [source.id, source]));
    const depth = rerank ? Math.max(limit, reranker.settings.candidates) : limit;
    const hits = await this.deps.index.search(workspaceId, {
      text: query,
      limit: depth + SLACK,
      generation: sources.generation,
      ...vector,
      filters: { types: scope.type, ...narrowed(sources, scoped, scope.filters) },
    });
    const found = hits.flatMap((hit) => {
      const source = live.get(hit.source_id);
      return source ? [{ hit, source }] : [];
    });
    if (!rerank) return { results: await this.cite(found.slice(0, limit)) };
    try {
      const order = await reranker.rerank(
        query,
        found.slice(0, depth).map(({ hit }) => hit.text),
        limit,
      );
      const reordered = order.flatMap(({ index, score }) => {
        const entry = found[index];
        return entry ? [{ hit: { ...entry.hit, score }, source: entry.source }] : [];
      });
      return { results: await this.cite(reordered.slice(0, limit)), reranked: true };
    } catch (err) {
      if (!(err instanceof RerankError)) throw err;
      logger.warn("reranking failed; answering from the first stage", { workspaceId, error: err });
      return {
        results: await this.cite(found.slice(0, limit)),
        reranked: false,
        rerank_error: err.message,
      };
    }
  }

  /** The hits as results, each placed in its source's text when its spans are stored. */
  private async cite(
    found: Array<{ hit: SearchHit; source: SourceItem }>,
  ): Promise<SearchResult[]> {
    const { passages } = this.deps;
    const keys = [...new Set(found.flatMap(({ source }) => source.chunks_key ?? []))];
    const spans = new Map(
      await Promise.all(keys.map(async (key) => [key, await passages?.spansOf(key)] as const)),
    );
    return found.map(({ hit, source }) => {
      const span = source.chunks_key ? spans.get(source.chunks_key)?.[hit.chunk_index] : undefined;
      return {
        source_id: source.id,
        chunk_index: hit.chunk_index,
        text: hit.text,
        score: Math.round(hit.score * 1e4) / 1e4,
        source_url_or_path: source.source_url_or_path,
        name: source.name,
        heading: hit.heading,
        page: hit.page,
        char_start: span?.[0] ?? null,
        char_end: span?.[1] ?? null,
        heading_path: headingPath(hit.heading),
        url:
          source.type === "url" && source.source_url_or_path
            ? passageUrl(source.source_url_or_path, hit.text)
            : null,
      };
    });
  }

  /** The sources a scope names, its crawls' pages among them; undefined when it names none. */
  private async scopedSources(
    workspaceId: string,
    { source_ids, crawl_id }: SearchScope,
  ): Promise<string[] | undefined> {
    if (crawl_id === undefined) return source_ids;
    const pages = await this.deps.live.ofCrawls(workspaceId, crawl_id);
    return source_ids === undefined ? [...pages] : source_ids.filter((id) => pages.has(id));
  }

  private async embed(
    workspaceId: string,
    query: string,
  ): Promise<{ vector: Float32Array; space: string } | undefined> {
    const { embedder } = this.deps;
    if (!embedder) return undefined;
    try {
      const [vector] = await embedder.embed([query], {
        operation: "embeddings.query",
        deadline: Date.now() + (this.options.queryTimeoutMs ?? 5000),
      });
      return vector && { vector, space: indexSpace(embedder.space) };
    } catch (error) {
      logger.warn("query embedding failed; searching lexically", { workspaceId, error });
      return undefined;
    }
  }
}

/**
 * The engine's source filters for a scope and a filter expression. The expression is evaluated
 * over the live sources only, so a disabled source never comes back whatever it says. The matches
 * go to the engine as the shorter of two lists: the sources to keep, or those to leave out (the
 * hidden ones and the live ones it does not match).
 */
function narrowed(
  sources: WorkspaceSources,
  scoped: string[] | undefined,
  filters: FilterExpression | undefined,
): { sourceIds?: string[]; excludeSourceIds: string[] } {
  if (!filters) return { sourceIds: scoped, excludeSourceIds: sources.hidden };
  const matched = new Set<string>();
  const unmatched: string[] = [];
  for (const source of sources.live) {
    if (matchesFilter(filters, source)) matched.add(source.id);
    else unmatched.push(source.id);
  }
  if (scoped !== undefined) {
    return { sourceIds: scoped.filter((id) => matched.has(id)), excludeSourceIds: [] };
  }
  if (matched.size <= unmatched.length + sources.hidden.length) {
    return { sourceIds: [...matched], excludeSourceIds: [] };
  }
  return { excludeSourceIds: [...sources.hidden, ...unmatched] };
}
