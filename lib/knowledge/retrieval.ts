import MiniSearch from "minisearch";
import { mapLimit } from "../async.js";
import type { Blobs } from "../store/blobs.js";
import type { Table } from "../store/table.js";
import type { StoredChunks } from "./indexer.js";
import { LiveSources } from "./live-sources.js";
import { queryTerms, termOf } from "./query.js";
import type { SourceItem } from "./sources.js";

export interface SearchResult {
  source_id: string;
  chunk_index: number;
  text: string;
  score: number;
  source_url_or_path: string | null;
  name: string;
  heading: string | null;
  page: number | null;
}

/** Finds the chunks of a workspace's enabled, indexed sources that best answer a query. */
export interface Retriever {
  search(workspaceId: string, query: string, limit: number): Promise<SearchResult[]>;
}

interface IndexedChunk {
  id: string;
  sourceId: string;
  chunkIndex: number;
  text: string;
  heading: string | null;
  page: number | null;
}

const wordSegmenter = new Intl.Segmenter("und", { granularity: "word" });
/** Scripts written without spaces between words, which need a dictionary to split. */
const UNSPACED =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;
const WORD = /[\p{L}\p{M}\p{N}_]+(?:['’.][\p{L}\p{M}\p{N}_]+)*/gu;

/**
 * Words by Unicode rules, so scripts written without spaces (Chinese, Japanese, Thai) index too.
 * Text without such scripts takes a regular expression that finds the same words about 37 times
 * faster than the segmenter (`npm run bench`), which matters when a workspace's index is built.
 */
export function tokenize(text: string): string[] {
  if (!UNSPACED.test(text)) return text.match(WORD) ?? [];
  const words: string[] = [];
  for (const { segment, isWordLike } of wordSegmenter.segment(text)) {
    if (isWordLike) words.push(segment);
  }
  return words;
}

const newIndex = () =>
  new MiniSearch<IndexedChunk>({
    fields: ["text", "heading"],
    storeFields: ["sourceId", "chunkIndex", "text", "heading", "page"],
    tokenize,
    processTerm: termOf,
    searchOptions: { boost: { heading: 1.5 }, fuzzy: 0 },
  });

/** One workspace's BM25 index, holding the chunk sets of the sources that were live at its last sync. */
class WorkspaceIndex {
  readonly search = newIndex();
  /** chunks_key -> ids of its chunks in the index. */
  readonly members = new Map<string, string[]>();
  /** Syncs run one at a time, so concurrent searches never add the same chunks twice. */
  queue: Promise<void> = Promise.resolve();
}

export interface LexicalRetrieverOptions {
  /** Workspaces whose index stays in memory between requests (least recently used go first). */
  maxWorkspaces?: number;
}

/**
 * BM25 ranking (MiniSearch) over each workspace's chunks. The index lives in memory across warm
 * invocations and is brought in line with the table on every search: one query lists the
 * workspace's sources, chunk sets of newly live sources are loaded from the bucket, and those of
 * disabled, deleted or reindexed sources are dropped, so a toggle shows at once.
 */
export class LexicalRetriever implements Retriever {
  private readonly indexes = new Map<string, WorkspaceIndex>();
  private readonly maxWorkspaces: number;
  private readonly live: LiveSources;

  constructor(
    private readonly deps: { table: Table; blobs: Blobs; live?: LiveSources },
    options: LexicalRetrieverOptions = {},
  ) {
    this.maxWorkspaces = options.maxWorkspaces ?? 20;
    this.live = deps.live ?? new LiveSources(deps.table);
  }

  async search(workspaceId: string, query: string, limit: number): Promise<SearchResult[]> {
    const live = await this.liveSources(workspaceId);
    const index = await this.sync(workspaceId, live);
    const byId = new Map([...live.values()].map((s) => [s.id, s]));
    // The bounded terms go in as they are, not split again by the index's tokenizer.
    const { terms, prefix } = queryTerms(query, tokenize);
    const hits = index.search
      .search(terms.join(" "), { combineWith: "OR", prefix, tokenize: () => terms })
      .slice(0, limit);
    return hits.flatMap((hit) => {
      const source = byId.get(hit.sourceId as string);
      if (!source) return [];
      return [
        {
          source_id: source.id,
          chunk_index: hit.chunkIndex as number,
          text: hit.text as string,
          score: Math.round(hit.score * 1e4) / 1e4,
          source_url_or_path: source.source_url_or_path,
          name: source.name,
          heading: (hit.heading as string | null) ?? null,
          page: (hit.page as number | null) ?? null,
        },
      ];
    });
  }

  /** The enabled, indexed sources, keyed by their chunk set. */
  private async liveSources(workspaceId: string): Promise<Map<string, SourceItem>> {
    const sources = await this.live.of(workspaceId);
    return new Map(sources.map((source) => [source.chunks_key as string, source]));
  }

  private async sync(workspaceId: string, live: Map<string, SourceItem>): Promise<WorkspaceIndex> {
    let index = this.indexes.get(workspaceId);
    this.indexes.delete(workspaceId);
    index ??= new WorkspaceIndex();
    this.indexes.set(workspaceId, index);
    while (this.indexes.size > this.maxWorkspaces) {
      const oldest = this.indexes.keys().next().value as string;
      this.indexes.delete(oldest);
    }
    const run = index.queue.then(() => this.apply(index, live));
    index.queue = run.catch(() => undefined);
    await run;
    return index;
  }

  private async apply(index: WorkspaceIndex, live: Map<string, SourceItem>): Promise<void> {
    for (const [key, ids] of index.members) {
      if (!live.has(key)) {
        index.search.discardAll(ids);
        index.members.delete(key);
      }
    }
    const missing = [...live.keys()].filter((key) => !index.members.has(key));
    const loaded = await mapLimit(missing, 8, (key) => this.deps.blobs.getJson<StoredChunks>(key));
    missing.forEach((key, i) => {
      const stored = loaded[i];
      if (!stored) return;
      const docs = stored.chunks.map((chunk) => ({
        id: `${key}#${chunk.index}`,
        sourceId: stored.sourceId,
        chunkIndex: chunk.index,
        text: chunk.text,
        heading: chunk.heading,
        page: chunk.page ?? null,
      }));
      index.search.addAll(docs);
      index.members.set(
        key,
        docs.map((d) => d.id),
      );
    });
  }
}
