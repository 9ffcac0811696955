/**
 * `lib/search` owns the search engine behind one small interface: index a source's chunks (and
 * their vectors), delete a source, and query a workspace with filters. The engine is LanceDB,
 * embedded, with its data on local disk (`<DATA_DIR>/search` locally) or in S3
 * (`s3://<bucket>/search`): a persisted full-text index and vector tables that a fresh process
 * opens in milliseconds instead of rebuilding an index from every chunk set. Each workspace is its
 * own database under `<base>/<workspaceId>/`, so a query names one workspace and can open nothing
 * else. Writes replace one source's rows in one commit per table and run under a per-workspace
 * writer lock (`WriterLock`), because on S3 without conditional writes two concurrent commits can
 * silently lose one. It knows nothing of sources' records, enablement or embeddings models: the
 * knowledge domain passes in rows, filters and query vectors, and data never flows back.
 */

import type { Connection, Table as LanceTable, Session } from "@lancedb/lancedb";
import type { Schema } from "apache-arrow";
import { LRUCache } from "lru-cache";
import { logger } from "../log.js";
import type { WriterLock } from "../store/writer-lock.js";
import { type Engine, engine, openTable, type SearchLocation, storageOptions } from "./engine.js";
import { type SearchFilters, sqlString, wherePredicate } from "./filters.js";
import {
  CHUNKS_TABLE,
  type ChunkRow,
  chunkRows,
  chunkSchema,
  HEADING_TERMS,
  RECENT_CHUNKS_TABLE,
  type SourceDocument,
  SPACES_TABLE,
  spacesSchema,
  TEXT_TERMS,
  type VectorRow,
  vectorRows,
  vectorSchema,
  vectorsTable,
} from "./rows.js";
import { fuse, lexicalScore, type Ranked, vectorScore } from "./scores.js";
import { contentTerms, queryTerms } from "./terms.js";

export {
  DynamoWriterLock,
  type LeaseOptions,
  type WriterLock,
  WriterLockLost,
  WriterLockTimeout,
} from "../store/writer-lock.js";
export type { S3Endpoint, SearchLocation } from "./engine.js";
export type { SearchFilters } from "./filters.js";
export type { IndexedChunk, IndexedSource, SourceDocument, SourceVectors } from "./rows.js";
export { BM25_HALF } from "./scores.js";
export { tokenize } from "./terms.js";

export interface SearchQuery {
  /** The query's words; searched as whole terms, at most the first 32 distinct ones. */
  text: string;
  /** The query's embedding in `space`; with both, the search is hybrid. */
  vector?: Float32Array | readonly number[];
  space?: string;
  limit: number;
  filters?: SearchFilters;
  /**
   * The caller's count of changes to the workspace's searchable content, a number that only
   * grows and moves after each change is written (the knowledge base's generation counter). A
   * search that brings a higher one than this process last saw reads the newest version of the
   * index first; otherwise the open version serves, at most `readConsistencySeconds` old.
   */
  generation?: number;
}

/** A chunk a search found, with its score on the 0–1 scale of both modes (see `scores.ts`). */
export interface SearchHit extends HitRow {
  score: number;
}

export interface SearchIndexOptions {
  location: SearchLocation;
  lock: WriterLock;
  /** Workspaces whose open tables are kept between searches (least recently used go first). */
  maxOpenWorkspaces?: number;
  /** Memory for the engine's cache of index pages, shared by every workspace. */
  indexCacheBytes?: number;
  /**
   * Chunks the recent table gathers before a write folds them into the chunks table (that many
   * at a time), and vectors written since a vector table's last optimize before a write
   * optimizes it (see `writeChunks`).
   */
  foldAfterRows?: number;
  /** Small data files after which a write compacts a vector table. */
  optimizeAfterFragments?: number;
  /** Vectors in a space after which the space gets an approximate (IVF-RaBitQ) index; flat below. */
  vectorIndexAfterRows?: number;
  /**
   * Chunk tables up to this many rows have their full-text indexes held whole in the engine's
   * cache (see `OpenWorkspace.warm`); larger ones are read from the store search by search.
   */
  prewarmMaxRows?: number;
  /** Cosine similarity below which a chunk is no vector match. */
  minSimilarity?: number;
  /** Lexical hits hybrid keeps at the top whatever the vectors say (see `fuse`). */
  protectedLexical?: number;
  /** Hits taken from each ranking before fusion. */
  candidates?: number;
  /**
   * How stale a search without a newer `generation` may be: an open table looks for a newer
   * version (a listing of the store, the slowest request of a search) when it was last checked
   * longer ago than this. 0: on every search. It also bounds how old a version a reader holds,
   * far below the hour an optimize keeps old versions for.
   */
  readConsistencySeconds?: number;
}

const WORKSPACE_ID = /^[A-Za-z0-9_-]{1,128}$/;
const MAX_LIMIT = 1000;
/** Versions older than this are pruned when a table is optimized. */
const KEEP_VERSIONS_MS = 60 * 60 * 1000;
const INDEXED_COLUMNS = [TEXT_TERMS, HEADING_TERMS] as const;
const HIT_COLUMNS = ["id", "source_id", "chunk_index", "text", "heading", "page"];
const HEADING_BOOST = 1.5;
/** Reciprocal rank fusion's constant below the protected lexical hits (60 is the usual). */
const RRF_K = 60;

const indexName = (column: string) => `${column}_idx`;

/** A chunk as a search answers it. */
interface HitRow {
  /** `${source_id}#${chunk_index}` */
  id: string;
  source_id: string;
  chunk_index: number;
  text: string;
  heading: string | null;
  page: number | null;
}

function checkWorkspace(workspaceId: string): void {
  if (!WORKSPACE_ID.test(workspaceId)) {
    throw new Error(`Invalid workspace id: ${JSON.stringify(workspaceId)}`);
  }
}

/** `source_id IN (...)` for the sources a write replaces. */
const ofSources = (sourceIds: readonly string[]) =>
  `source_id IN (${sourceIds.map(sqlString).join(", ")})`;

/** A workspace's database and the tables opened in it so far. */
class OpenWorkspace {
  readonly tables = new Map<string, Promise<LanceTable | undefined>>();
  /** The highest generation a search brought, and the refresh of the open tables it started. */
  private generation: number | undefined;
  private caughtUp: Promise<unknown> = Promise.resolve();
  /** Per chunk table, the version `warm` last looked at, and the rows its index held. */
  private readonly warmed = new Map<string, { version: number; indexedRows: Promise<number> }>();
  constructor(readonly db: Connection) {}

  /**
   * Settles once the open tables hold every change counted up to `generation`: a higher one than
   * seen so far moves them to their latest versions, and searches in flight with it wait for that.
   */
  catchUp(generation: number | undefined): Promise<unknown> {
    if (
      generation !== undefined &&
      (this.generation === undefined || generation > this.generation)
    ) {
      const opened = [...this.tables.values()];
      this.generation = generation;
      // A table whose open failed is opened again by the search that wants it.
      this.caughtUp = Promise.all(
        opened.map(async (table) => (await table.catch(() => undefined))?.checkoutLatest()),
      ).catch((err: unknown) => {
        // Unsettled: the next search tries again.
        this.generation = undefined;
        throw err;
      });
    }
    return this.caughtUp;
  }

  /**
   * Holds a chunk table's full-text indexes whole in the engine's cache, when it has at most
   * `maxRows` rows, so that a warm search reads only its hits' rows from the store: LanceDB 0.31
   * otherwise reads the query words' posting lists and the index's document table from the store
   * on every search, about half of a warm search's time on S3. Each version of a table is looked
   * at once, and prewarmed when a search first sees the table, and then: the recent table at
   * every version, as every write that adds rows to it rebuilds its index (and it is small); the
   * chunks table when its index holds more rows than before, as only a fold adds rows to it, by a
   * rebuild, while a deletion alone leaves the cached index valid. Searches of a version wait for
   * its prewarm, about a quarter of a second at 100k rows on the S3 emulator. A prewarm that
   * fails costs speed, never a result.
   */
  async warm(name: string, table: LanceTable, maxRows: number): Promise<void> {
    const version = await table.version();
    let known = this.warmed.get(name);
    if (known?.version !== version) {
      const indexedRows = this.prewarm(name, table, maxRows, known?.indexedRows);
      known = { version, indexedRows };
      this.warmed.set(name, known);
    }
    await known.indexedRows;
  }

  /** Prewarms a version as `warm` says; answers the rows its index holds (-1: not prewarmed). */
  private async prewarm(
    name: string,
    table: LanceTable,
    maxRows: number,
    previous: Promise<number> | undefined,
  ): Promise<number> {
    try {
      const [rows, before] = await Promise.all([table.countRows(), previous ?? -1]);
      if (rows === 0 || rows > maxRows) return -1;
      const stats = await table.indexStats(indexName(TEXT_TERMS));
      const indexedRows = stats?.numIndexedRows ?? 0;
      if (name === RECENT_CHUNKS_TABLE || indexedRows > before) {
        await Promise.all(INDEXED_COLUMNS.map((column) => table.prewarmIndex(indexName(column))));
      }
      return indexedRows;
    } catch (error) {
      logger.warn("prewarming a full-text index failed; searches read it from the store", {
        table: name,
        error,
      });
      return -1;
    }
  }

  /** A table of the workspace; a missing one is looked for again next time, as a write may create it. */
  table(name: string): Promise<LanceTable | undefined> {
    let table = this.tables.get(name);
    if (!table) {
      table = openTable(this.db, name);
      this.tables.set(name, table);
      table.then(
        (opened) => opened ?? this.tables.delete(name),
        () => this.tables.delete(name),
      );
    }
    return table;
  }
}

/**
 * The search index of every workspace, as one process holds it. Open workspaces (a connection and
 * table handles, no rows) are kept for the next search, the least recently used dropped past
 * `maxOpenWorkspaces`; the engine's caches of index pages and metadata are one session shared by
 * all of them, bounded by `indexCacheBytes`, so memory does not grow with the corpus.
 */
/** A single-source write waiting for its workspace's writer lock (see `commitWaiting`). */
interface Waiting {
  document: SourceDocument;
  precondition: (() => Promise<boolean>) | undefined;
  resolve(written: boolean): void;
  reject(error: unknown): void;
}

export class SearchIndex {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly workspaces: LRUCache<string, Promise<OpenWorkspace>>;
  private readonly options: Required<SearchIndexOptions>;
  private session: Session | undefined;

  constructor(options: SearchIndexOptions) {
    this.options = {
      maxOpenWorkspaces: 32,
      indexCacheBytes: 256 * 1024 * 1024,
      foldAfterRows: 2_000,
      optimizeAfterFragments: 64,
      vectorIndexAfterRows: 5_000,
      minSimilarity: 0.3,
      protectedLexical: 5,
      candidates: 50,
      readConsistencySeconds: 10,
      prewarmMaxRows: 200_000,
      ...options,
    };
    this.workspaces = new LRUCache({ max: this.options.maxOpenWorkspaces });
  }

  /**
   * Replaces one source's rows: its chunks, and its vectors in the space given (if any). With a
   * `precondition`, checked under the writer lock, nothing is written when it answers false (the
   * caller's revision was replaced meanwhile); answers whether the rows were written.
   */
  replaceSource(
    workspaceId: string,
    document: SourceDocument,
    options: { precondition?: () => Promise<boolean> } = {},
  ): Promise<boolean> {
    return new Promise((resolve, reject) => {
      checkWorkspace(workspaceId);
      const entry: Waiting = { document, precondition: options.precondition, resolve, reject };
      const waiting = this.waiting.get(workspaceId);
      if (waiting) {
        waiting.push(entry);
        return;
      }
      this.waiting.set(workspaceId, [entry]);
      void this.commitWaiting(workspaceId);
    });
  }

  /**
   * Group commit: the single-source writes that wait for a workspace's writer lock in this
   * process go in together once it is theirs, in one commit per table and one maintenance, so
   * five records of a batch cost one optimize, not five. Each keeps its own precondition.
   */
  private async commitWaiting(workspaceId: string): Promise<void> {
    let batch: Waiting[] = [];
    try {
      await this.options.lock.withLock(workspaceId, async () => {
        batch = this.waiting.get(workspaceId) ?? [];
        this.waiting.delete(workspaceId);
        const accepted = await Promise.all(
          batch.map((entry) => (entry.precondition ? entry.precondition() : true)),
        );
        // A later write of one source supersedes an earlier one in the same batch.
        const latest = new Map<string, SourceDocument>();
        batch.forEach((entry, i) => {
          if (accepted[i]) latest.set(entry.document.source.id, entry.document);
        });
        await this.writeLocked(workspaceId, [...latest.values()], true);
        batch.forEach((entry, i) => {
          entry.resolve(accepted[i] === true);
        });
      });
    } catch (err) {
      if (batch.length === 0) {
        batch = this.waiting.get(workspaceId) ?? [];
        this.waiting.delete(workspaceId);
      }
      for (const entry of batch) entry.reject(err);
    }
  }

  async replaceSources(
    workspaceId: string,
    documents: readonly SourceDocument[],
    options: { maintain?: boolean; precondition?: () => Promise<boolean> } = {},
  ): Promise<boolean> {
    checkWorkspace(workspaceId);
    if (documents.length === 0) return true;
    return this.options.lock.withLock(workspaceId, async () => {
      if (options.precondition && !(await options.precondition())) return false;
      await this.writeLocked(workspaceId, documents, options.maintain !== false);
      return true;
    });
  }

  /** Writes documents' rows, the caller holding the workspace's writer lock. */
  private async writeLocked(
    workspaceId: string,
    documents: readonly SourceDocument[],
    maintain: boolean,
  ): Promise<void> {
    if (documents.length === 0) return;
    const sourceIds = documents.map((d) => d.source.id);
    const chunks = documents.flatMap(chunkRows);
    const bySpace = new Map<string, VectorRow[]>();
    for (const document of documents) {
      if (!document.vectors) continue;
      const table = vectorsTable(document.vectors.space);
      bySpace.set(table, [...(bySpace.get(table) ?? []), ...vectorRows(document)]);
    }
    const eng = await engine();
    const workspace = await this.workspace(workspaceId);
    await this.writeChunks(eng, workspace, chunks, sourceIds, maintain);
    // Spaces that exist lose the sources' old vectors unless new ones are given; new spaces
    // are registered, then created.
    await this.register(eng, workspace, [...bySpace.keys()]);
    const written: LanceTable[] = [];
    for (const name of await this.spaces(workspace, bySpace.keys())) {
      const table = await this.write(eng, workspace, name, bySpace.get(name) ?? [], sourceIds);
      if (table) written.push(table);
    }
    if (maintain) for (const table of written) await this.maintainVectors(eng, table, false);
  }

  /**
   * Writes sources' chunks so that a write costs the sources' rows, not the corpus. LanceDB 0.31
   * misranks and drops rows that a full-text index does not hold yet (a row with a query word
   * four times is never found; fixed in later versions, which publish no linux-arm64 build yet),
   * and folding new rows into an index means an optimize, which compacts the whole table (about
   * 4 s at 100k rows, 18 s at 1M). So the chunks live in two tables, each searched by its index
   * alone: `chunks`, the bulk, which a write only deletes from (no rewrite), and `recent_chunks`,
   * which takes the write's rows and is optimized at once, a cost bounded by its size. Once it
   * holds `foldAfterRows` rows they move into `chunks` (`fold`), the one step that costs the
   * corpus, paid once per that many rows. A bulk load (`maintain: false`) writes into `chunks`
   * directly, searchable once `optimize` has indexed it.
   */
  private async writeChunks(
    eng: Engine,
    workspace: OpenWorkspace,
    rows: ChunkRow[],
    sourceIds: readonly string[],
    maintain: boolean,
  ): Promise<void> {
    const [chunks, recent] = await Promise.all([
      this.chunkTable(eng, workspace, CHUNKS_TABLE),
      this.chunkTable(eng, workspace, RECENT_CHUNKS_TABLE),
    ]);
    const [target, other] = maintain ? [recent, chunks] : [chunks, recent];
    await replaceRows(target, rows, sourceIds);
    if (maintain && rows.length > 0) await recent.optimize({ cleanupOlderThan: keepSince() });
    // The new rows are searchable before the old ones leave: a search meanwhile may see a
    // source's old and new chunks (the same id counts once, the recent one), never neither.
    await other.checkoutLatest();
    await other.delete(ofSources(sourceIds));
    if (maintain && (await recent.countRows()) >= this.options.foldAfterRows) {
      await fold(chunks, recent, this.options.foldAfterRows);
    }
  }

  /** Folds every row written into the workspace's indexes and compacts its tables. */
  async optimize(workspaceId: string): Promise<void> {
    checkWorkspace(workspaceId);
    const eng = await engine();
    await this.options.lock.withLock(workspaceId, async () => {
      const workspace = await this.workspace(workspaceId);
      const chunks = await workspace.table(CHUNKS_TABLE);
      if (chunks) {
        const recent = await this.chunkTable(eng, workspace, RECENT_CHUNKS_TABLE);
        await fold(chunks, recent, this.options.foldAfterRows);
      }
      for (const name of await this.spaces(workspace, [])) {
        const table = await workspace.table(name);
        if (!table) continue;
        await table.checkoutLatest();
        await this.maintainVectors(eng, table, true);
      }
    });
  }

  /** Deletes every row of a source. */
  async removeSource(workspaceId: string, sourceId: string): Promise<void> {
    await this.replaceSources(workspaceId, [
      { source: { id: sourceId, type: "", crawlId: null }, chunks: [] },
    ]);
  }

  /**
   * The chunks that best answer a query, best first. Lexical (BM25 over the words of the text and,
   * boosted, the heading) without a vector; hybrid with one (see `fuse`). Filters are applied by
   * the engine before ranking. A workspace with nothing indexed answers no hits.
   */
  async search(workspaceId: string, query: SearchQuery): Promise<SearchHit[]> {
    checkWorkspace(workspaceId);
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_LIMIT) {
      throw new Error(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    }
    const where = wherePredicate(query.filters);
    if (where === null) return [];
    const eng = await engine();
    const workspace = await this.workspace(workspaceId);
    await workspace.catchUp(query.generation);
    const chunks = await this.searchable(workspace);
    if (chunks.length === 0) return [];
    const terms = queryTerms(query.text);
    const { vector: queryVector, space } = query;
    if (queryVector === undefined || space === undefined) {
      const lexical = await this.lexical(eng, chunks, terms, where, query.limit);
      return lexical.map(({ row, score }) => ({ ...row, score }));
    }
    const depth = Math.max(query.limit, this.options.candidates);
    // Beside a vector, the lexical side searches the query's content words only: a match on
    // "our" or "with" alone is no evidence, and as a protected lexical hit it would sit above the
    // chunk that answers by meaning.
    const [lexical, vector] = await Promise.all([
      this.lexical(eng, chunks, contentTerms(terms), where, depth),
      this.nearest(workspace, space, queryVector, where, depth),
    ]);
    const rows = new Map(lexical.map(({ row }) => [row.id, row]));
    const fused = fuse(
      lexical.map(({ row, score }) => ({ id: row.id, score })),
      vector,
      {
        limit: query.limit,
        protectedLexical: this.options.protectedLexical,
        rrfK: RRF_K,
      },
    );
    const missing = fused.filter(({ id }) => !rows.has(id)).map(({ id }) => id);
    if (missing.length > 0) {
      const fetched = await Promise.all(
        chunks.map(
          (table) =>
            table
              .query()
              .where(`id IN (${missing.map(sqlString).join(", ")})`)
              .select(HIT_COLUMNS)
              .toArray() as Promise<HitRow[]>,
        ),
      );
      for (const row of fetched.flat()) rows.set(row.id, plain(row));
    }
    return fused.flatMap(({ id, score }) => {
      const row = rows.get(id);
      return row ? [{ ...row, score }] : [];
    });
  }

  /** The workspace's chunk tables, their indexes prewarmed (see `OpenWorkspace.warm`). */
  private async searchable(workspace: OpenWorkspace): Promise<LanceTable[]> {
    const found = await Promise.all(
      [CHUNKS_TABLE, RECENT_CHUNKS_TABLE].map(async (name) => {
        const table = await workspace.table(name);
        if (!table) return [];
        await workspace.warm(name, table, this.options.prewarmMaxRows);
        return [table];
      }),
    );
    return found.flat();
  }

  /**
   * BM25 over both chunk tables, each by its index alone (`fastSearch`: rows an index does not
   * hold yet are the ones 0.31 misranks). Each table scores by its own statistics, so a recent
   * chunk's score may differ a little from what it gets once folded in.
   */
  private async lexical(
    { lance }: Engine,
    chunks: LanceTable[],
    terms: string[],
    where: string | undefined,
    limit: number,
  ): Promise<Array<{ row: HitRow; score: number }>> {
    if (terms.length === 0) return [];
    const { BooleanQuery, MatchQuery, Occur, Operator } = lance;
    // One OR match per column over the terms joined by spaces, which the index's whitespace
    // tokenizer splits back into exactly these terms. A match query is not parsed as query
    // syntax, so quotes, AND, parentheses or colons in the user's words cannot fail it.
    const words = terms.join(" ");
    const query = new BooleanQuery([
      [Occur.Should, new MatchQuery(words, TEXT_TERMS, { operator: Operator.Or })],
      [
        Occur.Should,
        new MatchQuery(words, HEADING_TERMS, { operator: Operator.Or, boost: HEADING_BOOST }),
      ],
    ]);
    const found = await Promise.all(
      chunks.map((table) => {
        let search = table
          .search(query)
          .fastSearch()
          .select([...HIT_COLUMNS, "_score"])
          .limit(limit);
        if (where) search = search.where(where);
        return search.toArray() as Promise<Array<HitRow & { _score: number }>>;
      }),
    );
    // A fold copies rows before it deletes them: an id found in both tables counts once.
    const hits = new Map<string, { row: HitRow; score: number }>();
    for (const row of found.flat()) {
      hits.set(row.id, { row: plain(row), score: lexicalScore(row._score) });
    }
    return [...hits.values()].sort((a, b) => b.score - a.score).slice(0, limit);
  }

  private async nearest(
    workspace: OpenWorkspace,
    space: string,
    vector: Float32Array | readonly number[],
    where: string | undefined,
    limit: number,
  ): Promise<Ranked[]> {
    const table = await workspace.table(vectorsTable(space));
    if (!table) return [];
    let search = table
      .vectorSearch(Array.from(vector))
      .distanceType("cosine")
      .select(["id", "_distance"])
      .limit(limit);
    if (where) search = search.where(where);
    const rows = (await search.toArray()) as Array<{ id: string; _distance: number }>;
    return rows
      .map((row) => ({ id: row.id, score: vectorScore(row._distance) }))
      .filter((hit) => hit.score >= this.options.minSimilarity);
  }

  /** The workspace's vector tables, as its registry lists them, and the tables named. */
  private async spaces(workspace: OpenWorkspace, names: Iterable<string>): Promise<Set<string>> {
    const registry = await workspace.table(SPACES_TABLE);
    if (!registry) return new Set(names);
    await registry.checkoutLatest();
    const rows = (await registry.query().select(["table"]).toArray()) as Array<{ table: string }>;
    return new Set([...names, ...rows.map((row) => row.table)]);
  }

  /** Records vector tables about to be written for the first time in the workspace's registry. */
  private async register(eng: Engine, workspace: OpenWorkspace, names: string[]): Promise<void> {
    const known = await this.spaces(workspace, []);
    const fresh = names.filter((name) => !known.has(name)).map((table) => ({ table }));
    if (fresh.length === 0) return;
    const registry = await workspace.table(SPACES_TABLE);
    if (registry) await registry.add(fresh);
    else {
      const created = await workspace.db.createTable(SPACES_TABLE, fresh, {
        schema: spacesSchema(eng),
      });
      workspace.tables.set(SPACES_TABLE, Promise.resolve(created));
    }
  }

  /**
   * Writes one vector table's rows of the given sources (see `replaceRows`), creating the table
   * with its id index on its first rows (their length is the space's dimensions). Answers the
   * table, if there is one.
   */
  private async write(
    eng: Engine,
    workspace: OpenWorkspace,
    name: string,
    rows: VectorRow[],
    sourceIds: readonly string[],
  ): Promise<LanceTable | undefined> {
    const table = await workspace.table(name);
    if (table) await replaceRows(table, rows, sourceIds);
    else if (rows[0]) {
      return this.created(eng, workspace, name, rows, vectorSchema(eng, rows[0].vector.length));
    }
    return table;
  }

  /** A table of chunks, created empty with its indexes if the workspace has none yet. */
  private async chunkTable(
    eng: Engine,
    workspace: OpenWorkspace,
    name: string,
  ): Promise<LanceTable> {
    const table = await workspace.table(name);
    if (table) return table;
    const created = await this.created(eng, workspace, name, [], chunkSchema(eng));
    const { Index } = eng.lance;
    for (const column of INDEXED_COLUMNS) {
      await created.createIndex(column, {
        config: Index.fts({
          baseTokenizer: "whitespace",
          lowercase: false,
          stem: false,
          removeStopWords: false,
          asciiFolding: false,
          withPosition: false,
        }),
        name: indexName(column),
      });
    }
    return created;
  }

  /**
   * Creates a table with a B-tree on the id: a write's merge finds the rows it replaces through
   * it, and hybrid search fetches vector hits' text by id, both without scanning the table.
   */
  private async created(
    { lance }: Engine,
    workspace: OpenWorkspace,
    name: string,
    rows: VectorRow[],
    schema: Schema,
  ): Promise<LanceTable> {
    const table = await workspace.db.createTable(
      name,
      rows.map((row) => ({ ...row })),
      { schema },
    );
    await table.createIndex("id", { config: lance.Index.btree(), name: indexName("id") });
    workspace.tables.set(name, Promise.resolve(table));
    return table;
  }

  /**
   * A vector table's maintenance. Rows written after its approximate index was built are
   * searched exactly by a scan; once `foldAfterRows` of them or `optimizeAfterFragments` small
   * files (one per write) have gathered, or when `force`d, the table is optimized: files
   * compacted, new rows folded into its indexes, versions older than an hour pruned. A vector
   * table gets its approximate index once it holds `vectorIndexAfterRows` (a flat scan of 100k
   * vectors of 256 dimensions took about 0.5 s): IVF partitions over RaBitQ-quantized vectors,
   * 4 bits a dimension. At 100k vectors of 256 dimensions it built in about 4 s (IVF-PQ took
   * 270 s, HNSW 220 s, on this 2-core machine) and found 85% of the exact top 10 in about 3 ms,
   * always in the right neighbourhood, without re-ranking candidates on their exact vectors:
   * that re-ranking reads each candidate's vector from the store, which cost about 190 ms a
   * search on the S3 emulator (1 bit a dimension found 24% without it).
   */
  private async maintainVectors(
    { lance }: Engine,
    table: LanceTable,
    force: boolean,
  ): Promise<void> {
    const primary = indexName("vector");
    const [index, stats] = await Promise.all([table.indexStats(primary), table.stats()]);
    if (!index && stats.numRows >= this.options.vectorIndexAfterRows) {
      await table.createIndex("vector", {
        config: lance.Index.ivfRq({ distanceType: "cosine", numBits: 4 }),
        name: primary,
      });
    } else if (
      force ||
      (index?.numUnindexedRows ?? 0) >= this.options.foldAfterRows ||
      stats.fragmentStats.numSmallFragments >= this.options.optimizeAfterFragments
    ) {
      await table.optimize({ cleanupOlderThan: keepSince() });
    }
  }

  /** The workspace's database, opened once and kept among the most recently used. */
  private async workspace(workspaceId: string): Promise<OpenWorkspace> {
    let open = this.workspaces.get(workspaceId);
    if (!open) {
      open = this.connect(workspaceId);
      open.catch(() => this.workspaces.delete(workspaceId));
      this.workspaces.set(workspaceId, open);
    }
    return open;
  }

  private async connect(workspaceId: string): Promise<OpenWorkspace> {
    const { lance } = await engine();
    // One session for every workspace: the engine's index and metadata caches have one bound
    // (its defaults are 6 GB and 1 GB), however many workspaces this process opens.
    this.session ??= new lance.Session(
      BigInt(this.options.indexCacheBytes),
      BigInt(Math.ceil(this.options.indexCacheBytes / 4)),
    );
    const base = this.options.location.uri.replace(/\/+$/, "");
    const options = storageOptions(this.options.location.s3);
    const db = await lance.connect(`${base}/${workspaceId}`, {
      readConsistencyInterval: this.options.readConsistencySeconds,
      session: this.session,
      ...(options ? { storageOptions: options } : {}),
    });
    return new OpenWorkspace(db);
  }
}

/** The oldest version an optimize keeps: a search in flight reads a younger one. */
const keepSince = () => new Date(Date.now() - KEEP_VERSIONS_MS);

/**
 * Replaces the given sources' rows of a table in one commit: rows matched by id are updated, new
 * ones inserted, and the sources' rows not among them deleted.
 */
async function replaceRows(
  table: LanceTable,
  rows: ChunkRow[] | VectorRow[],
  sourceIds: readonly string[],
): Promise<void> {
  // Another process may have committed since this handle last read: write on the latest.
  await table.checkoutLatest();
  if (rows.length === 0) await table.delete(ofSources(sourceIds));
  else {
    await table
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .whenNotMatchedBySourceDelete({ where: ofSources(sourceIds) })
      .execute(rows.map((row) => ({ ...row })));
  }
}

/**
 * Moves every row of the recent table into the chunks table, `batchRows` at a time (one large
 * source may have put tens of thousands there: memory stays bounded), and optimizes it, which
 * folds them into its indexes and compacts it. The rows are in the chunks table's index before
 * they leave the recent table, so a search finds each of them throughout. Run under the writer
 * lock, so the recent table holds still while it is read page by page.
 */
async function fold(chunks: LanceTable, recent: LanceTable, batchRows: number): Promise<void> {
  await Promise.all([chunks.checkoutLatest(), recent.checkoutLatest()]);
  const total = await recent.countRows();
  for (let offset = 0; offset < total; offset += batchRows) {
    const rows = await recent.query().offset(offset).limit(batchRows).toArrow();
    await chunks.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows);
  }
  await chunks.optimize({ cleanupOlderThan: keepSince() });
  if (total > 0) {
    await recent.delete("true");
    await recent.optimize({ cleanupOlderThan: keepSince() });
  }
}

/** A row of the engine's answer as a plain object with only the hit's columns. */
function plain(row: HitRow): HitRow {
  return {
    id: row.id,
    source_id: row.source_id,
    chunk_index: row.chunk_index,
    text: row.text,
    heading: row.heading,
    page: row.page,
  };
}
