import type { Embedder } from "../../llm/embeddings.js";
import { logger } from "../../log.js";
import type { SearchIndex } from "../../search/index.js";
import { indexSpace } from "../indexing/embeddings.js";
import type { SourceType } from "../sources/sources.js";
import type { LiveSources } from "./live-sources.js";

export interface SearchResult {
  source_id: string;
  chunk_index: number;
  text: string;
  /** 0–1 in both modes (see `lib/search/scores.ts`). */
  score: number;
  source_url_or_path: string | null;
  name: string;
  heading: string | null;
  page: number | null;
}

/** Narrows a search to some sources; every list given narrows it, an absent one does not. */
export interface SearchScope {
  source_ids?: string[];
  type?: SourceType[];
  crawl_id?: string[];
}

/** Finds the chunks of a workspace's enabled, indexed sources that best answer a query. */
export interface Retriever {
  search(
    workspaceId: string,
    query: string,
    limit: number,
    scope?: SearchScope,
  ): Promise<SearchResult[]>;
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
}

/**
 * Search over the persisted index (`lib/search`), kept current by the index worker. What may be
 * returned is decided here, on every search, from the table: the workspace's sources that exist
 * but are not enabled and indexed are excluded inside the engine (before its top-k cut), so a
 * disable or enable shows on the very next search without touching the index. The workspace's
 * counter read with them tells the index when to look for its newest version (a source indexed
 * since), so a search that finds no change costs no listing of the store. With an embedding
 * model the search is hybrid; when embedding the query fails, it answers lexically.
 */
export class IndexRetriever implements Retriever {
  constructor(
    private readonly deps: IndexRetrieverDeps,
    private readonly options: { queryTimeoutMs?: number } = {},
  ) {}

  async search(
    workspaceId: string,
    query: string,
    limit: number,
    scope: SearchScope = {},
  ): Promise<SearchResult[]> {
    const [sources, vector, sourceIds] = await Promise.all([
      this.deps.live.of(workspaceId),
      this.embed(workspaceId, query),
      this.scopedSources(workspaceId, scope),
    ]);
    const live = new Map(sources.live.map((source) => [source.id, source]));
    const hits = await this.deps.index.search(workspaceId, {
      text: query,
      limit: limit + SLACK,
      generation: sources.generation,
      ...vector,
      filters: {
        sourceIds,
        types: scope.type,
        excludeSourceIds: sources.hidden,
      },
    });
    return hits
      .flatMap((hit) => {
        const source = live.get(hit.source_id);
        if (!source) return [];
        return [
          {
            source_id: source.id,
            chunk_index: hit.chunk_index,
            text: hit.text,
            score: Math.round(hit.score * 1e4) / 1e4,
            source_url_or_path: source.source_url_or_path,
            name: source.name,
            heading: hit.heading,
            page: hit.page,
          },
        ];
      })
      .slice(0, limit);
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
