import { mapLimit } from "../async.js";
import type { Embedder } from "../llm/embeddings.js";
import { logger } from "../log.js";
import type { Blobs } from "../store/blobs.js";
import type { Table } from "../store/table.js";
import type { Chunk } from "./chunking.js";
import { loadVectors } from "./embeddings.js";
import type { StoredChunks } from "./indexer.js";
import { LiveSources } from "./live-sources.js";
import type { Retriever, SearchResult } from "./retrieval.js";
import type { SourceItem } from "./sources.js";

/** A chunk set with its vectors in the current embedding space. */
interface VectorSet {
  source: SourceItem;
  chunks: Chunk[];
  dimensions: number;
  /** Unit-length rows, one per chunk. */
  rows: Float32Array;
  bytes: number;
}

/** One workspace's vectors, keyed by chunk set and indexing time (see `cacheKey`). */
class WorkspaceVectors {
  /** null: the set has no vectors in this space (indexed before embeddings, or another model). */
  readonly sets = new Map<string, VectorSet | null>();
  bytes = 0;
  /** Syncs run one at a time, so concurrent searches never load a set twice. */
  queue: Promise<void> = Promise.resolve();
}

/**
 * The cache key of a live source's vectors. A reindex of unchanged text keeps the chunk set's key
 * but may add vectors (embeddings configured since), and its new `indexed_at` makes it load again.
 */
const cacheKey = (source: SourceItem) => `${source.chunks_key}@${source.indexed_at}`;

/**
 * The dot product of a row with the query. Four accumulators let the CPU overlap the
 * multiply-adds: about twice as fast as the plain loop on V8, and this is the hot loop of search.
 */
function dot(rows: Float32Array, offset: number, query: Float32Array): number {
  const at = (j: number) => (rows[offset + j] as number) * (query[j] as number);
  const end = query.length - (query.length % 4);
  let a = 0;
  let b = 0;
  let c = 0;
  let d = 0;
  let j = 0;
  for (; j < end; j += 4) {
    a += at(j);
    b += at(j + 1);
    c += at(j + 2);
    d += at(j + 3);
  }
  for (; j < query.length; j++) a += at(j);
  return a + b + c + d;
}

interface Neighbour {
  set: VectorSet;
  row: number;
  score: number;
}

/** The `k` rows most similar to a unit query vector, at least `min` similar, best first. */
function nearest(
  sets: Iterable<VectorSet>,
  query: Float32Array,
  k: number,
  min: number,
): Neighbour[] {
  const top: Neighbour[] = [];
  for (const set of sets) {
    // Never compare across spaces, even if a blob slipped past the key's space tag.
    if (set.dimensions !== query.length) continue;
    for (let row = 0; row < set.chunks.length; row++) {
      const score = dot(set.rows, row * set.dimensions, query);
      if (score < min || (top.length === k && score <= (top[k - 1] as Neighbour).score)) continue;
      let at = top.length;
      while (at > 0 && (top[at - 1] as Neighbour).score < score) at--;
      top.splice(at, 0, { set, row, score });
      if (top.length > k) top.pop();
    }
  }
  return top;
}

/**
 * Reciprocal rank fusion: a result earns 1 / (k + rank) from every ranking it appears in, so
 * what both rankings place high rises, and neither ranking's score scale matters. Ties keep the
 * order of the rankings as given.
 */
export function fuseRankings(rankings: SearchResult[][], k: number): SearchResult[] {
  const fused = new Map<string, { result: SearchResult; score: number }>();
  for (const ranking of rankings) {
    ranking.forEach((result, i) => {
      const id = `${result.source_id}#${result.chunk_index}`;
      const entry = fused.get(id) ?? { result, score: 0 };
      entry.score += 1 / (k + i + 1);
      fused.set(id, entry);
    });
  }
  return [...fused.values()]
    .sort((a, b) => b.score - a.score)
    .map(({ result, score }) => ({ ...result, score: Math.round(score * 1e6) / 1e6 }));
}

export interface HybridOptions {
  /** Results taken from each ranking before fusion. */
  candidates?: number;
  /** RRF's constant: larger values flatten the difference between ranks (60 is the usual). */
  rrfK?: number;
  /** Cosine similarity below which a chunk is no vector match (EMBEDDING_MIN_SIMILARITY). */
  minSimilarity?: number;
  /** The time a query's embedding may take before search answers lexically. */
  queryTimeoutMs?: number;
  /** Memory for cached vectors and their text across workspaces; least recently used go first. */
  maxCacheBytes?: number;
}

export interface HybridDeps {
  table: Table;
  blobs: Blobs;
  /** The BM25 ranking, itself synced with the table on every search. */
  lexical: Retriever;
  /** Without one (no key or no EMBEDDING_MODEL), search is the lexical ranking unchanged. */
  embedder: Embedder | undefined;
  /** Shared with the lexical retriever, so one search reads the workspace's sources once. */
  live?: LiveSources;
}

/**
 * Lexical (BM25) and vector rankings fused with reciprocal rank fusion. Vectors are brute-forced:
 * each workspace's vectors stay in memory across warm invocations and are brought in line with
 * the table on every search, exactly as the lexical index is (newly live chunk sets loaded,
 * disabled, deleted or reindexed ones dropped), so retrieval stays scoped to the workspace's
 * enabled, indexed sources.
 *
 * Scale: search is one dot product per chunk, about 0.1 s per 100k chunks of 512 dimensions on
 * one vCPU (three times that at 1536), and memory is 4 bytes per dimension per chunk (1536: 6 KB,
 * so the default 256 MiB cache holds ~40k chunks; EMBEDDING_DIMENSIONS=512 holds ~120k). Up to
 * ~100k chunks per workspace this is simpler and exact. Beyond that, or with many large
 * workspaces per process, an approximate nearest-neighbour index (HNSW) in a vector store
 * replaces it (pgvector, OpenSearch Serverless or S3 Vectors), filtered by workspace and by the
 * enabled sources' ids, with this class's fusion kept as it is.
 * When embedding the query fails, the search answers with the lexical ranking alone.
 */
export class HybridRetriever implements Retriever {
  private readonly workspaces = new Map<string, WorkspaceVectors>();
  private readonly options: Required<HybridOptions>;
  private readonly live: LiveSources;

  constructor(
    private readonly deps: HybridDeps,
    options: HybridOptions = {},
  ) {
    this.live = deps.live ?? new LiveSources(deps.table);
    this.options = {
      candidates: 50,
      rrfK: 60,
      minSimilarity: 0.3,
      queryTimeoutMs: 5000,
      maxCacheBytes: 256 * 1024 * 1024,
      ...options,
    };
  }

  async search(workspaceId: string, query: string, limit: number): Promise<SearchResult[]> {
    if (!this.deps.embedder) return this.deps.lexical.search(workspaceId, query, limit);
    const depth = Math.max(limit, this.options.candidates);
    const [lexical, vector] = await Promise.all([
      this.deps.lexical.search(workspaceId, query, depth),
      this.vectorSearch(this.deps.embedder, workspaceId, query, depth),
    ]);
    // Vector first: on a tie it wins, since lexical search (OR over every word, function words
    // included) matches on any shared word, while a vector match had to clear a similarity floor.
    return fuseRankings([vector, lexical], this.options.rrfK).slice(0, limit);
  }

  private async vectorSearch(
    embedder: Embedder,
    workspaceId: string,
    query: string,
    depth: number,
  ): Promise<SearchResult[]> {
    const [live, queryVector] = await Promise.all([
      this.live
        .of(workspaceId)
        .then((sources) => new Map(sources.map((source) => [cacheKey(source), source]))),
      embedder
        .embed([query], {
          operation: "embeddings.query",
          deadline: Date.now() + this.options.queryTimeoutMs,
        })
        .then(([vector]) => vector)
        .catch((error: unknown) => {
          logger.warn("query embedding failed; searching lexically", { workspaceId, error });
          return undefined;
        }),
    ]);
    if (!queryVector) return [];
    const vectors = await this.sync(embedder, workspaceId, live);
    const sets = [...vectors.sets.values()].filter((set): set is VectorSet => set !== null);
    return nearest(sets, queryVector, depth, this.options.minSimilarity).map(
      ({ set, row, score }) => {
        const chunk = set.chunks[row] as Chunk;
        return {
          source_id: set.source.id,
          chunk_index: chunk.index,
          text: chunk.text,
          score: Math.round(score * 1e4) / 1e4,
          source_url_or_path: set.source.source_url_or_path,
          name: set.source.name,
          heading: chunk.heading,
          page: chunk.page ?? null,
        };
      },
    );
  }

  private async sync(
    embedder: Embedder,
    workspaceId: string,
    live: Map<string, SourceItem>,
  ): Promise<WorkspaceVectors> {
    let vectors = this.workspaces.get(workspaceId);
    this.workspaces.delete(workspaceId);
    vectors ??= new WorkspaceVectors();
    this.workspaces.set(workspaceId, vectors);
    const current = vectors;
    const run = current.queue.then(() => this.apply(embedder, current, live));
    current.queue = run.catch(() => undefined);
    await run;
    this.evict(workspaceId);
    return current;
  }

  private async apply(
    embedder: Embedder,
    vectors: WorkspaceVectors,
    live: Map<string, SourceItem>,
  ): Promise<void> {
    for (const [key, set] of vectors.sets) {
      if (!live.has(key)) {
        vectors.sets.delete(key);
        vectors.bytes -= set?.bytes ?? 0;
      }
    }
    const missing = [...live].filter(([key]) => !vectors.sets.has(key));
    const loaded = await mapLimit(missing, 8, ([, source]) => this.load(embedder, source));
    missing.forEach(([key], i) => {
      const set = loaded[i] ?? null;
      vectors.sets.set(key, set);
      vectors.bytes += set?.bytes ?? 0;
    });
  }

  private async load(embedder: Embedder, source: SourceItem): Promise<VectorSet | null> {
    const chunksKey = source.chunks_key as string;
    const matrix = await loadVectors(this.deps.blobs, chunksKey, embedder.space);
    if (!matrix) return null;
    const stored = await this.deps.blobs.getJson<StoredChunks>(chunksKey);
    if (!stored || stored.chunks.length !== matrix.count) {
      logger.warn("vectors do not match their chunk set; source searched lexically", { chunksKey });
      return null;
    }
    const textBytes = stored.chunks.reduce((sum, c) => sum + 2 * c.text.length, 0);
    return {
      source,
      chunks: stored.chunks,
      dimensions: matrix.dimensions,
      rows: matrix.rows,
      bytes: matrix.rows.byteLength + textBytes,
    };
  }

  /** Drops least recently searched workspaces until the cache fits; the current one always stays. */
  private evict(current: string): void {
    let total = 0;
    for (const vectors of this.workspaces.values()) total += vectors.bytes;
    for (const [workspaceId, vectors] of this.workspaces) {
      if (total <= this.options.maxCacheBytes) return;
      if (workspaceId === current) continue;
      this.workspaces.delete(workspaceId);
      total -= vectors.bytes;
    }
  }
}
