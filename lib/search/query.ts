import type { Table as LanceTable } from "@lancedb/lancedb";
import { type Engine, engine } from "./engine.js";
import { type SearchFilters, sqlString, wherePredicate } from "./filters.js";
import type { SearchSettings } from "./options.js";
import { CHUNKS_FAMILY, chunkId, HEADING_TERMS, TEXT_TERMS, vectorsFamily } from "./rows.js";
import { fuse, lexicalScore, type Ranked, vectorScore } from "./scores.js";
import { liveTables, RECENT_LEVEL, readRegistry } from "./segments.js";
import { contentTerms, queryTerms } from "./terms.js";
import { checkWorkspace, type OpenWorkspace, type Workspaces } from "./workspaces.js";

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

const MAX_LIMIT = 1000;
/**
 * The columns a hit is read from: its id is `${source_id}#${chunk_index}`, not read again (each
 * column of a hit is a request of its own on S3).
 */
const STORED_COLUMNS = ["source_id", "chunk_index", "text", "heading", "page"];
type StoredRow = Omit<HitRow, "id">;
const HEADING_BOOST = 1.5;
/** Reciprocal rank fusion's constant below the protected lexical hits (60 is the usual). */
const RRF_K = 60;

type QuerySettings = Pick<
  SearchSettings,
  "minSimilarity" | "protectedLexical" | "candidates" | "prewarmMaxRows"
>;

/**
 * The chunks that best answer a query, best first. Lexical (BM25 over the words of the text and,
 * boosted, the heading) without a vector; hybrid with one (see `fuse`). Filters are applied by
 * the engine before ranking. A workspace with nothing indexed answers no hits.
 *
 * A search that finds a table gone under it (a merge's input dropped, or a recent table's
 * version pruned, while this process held a version older than the grace) opens the workspace
 * afresh and searches once more, on the registry's latest version.
 */
export async function searchWorkspace(
  settings: QuerySettings,
  workspaces: Workspaces,
  workspaceId: string,
  query: SearchQuery,
): Promise<SearchHit[]> {
  checkWorkspace(workspaceId);
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_LIMIT) {
    throw new Error(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  }
  const where = wherePredicate(query.filters);
  if (where === null) return [];
  try {
    return await searchOpen(settings, await workspaces.get(workspaceId), query, where);
  } catch (error) {
    if (!(error instanceof Error && /not found/i.test(error.message))) throw error;
    workspaces.forget(workspaceId);
    return searchOpen(settings, await workspaces.get(workspaceId), query, where);
  }
}

async function searchOpen(
  settings: QuerySettings,
  workspace: OpenWorkspace,
  query: SearchQuery,
  where: string | undefined,
): Promise<SearchHit[]> {
  const eng = await engine();
  await workspace.catchUp(query.generation);
  const chunks = await familyTables(workspace, CHUNKS_FAMILY, settings.prewarmMaxRows);
  if (chunks.length === 0) return [];
  const terms = queryTerms(query.text);
  const { vector: queryVector, space } = query;
  if (queryVector === undefined || space === undefined) {
    const ranked = await lexicalCandidates(eng, chunks, terms, where, query.limit, "scores");
    const best = await bestRows(chunks, ranked, query.limit);
    if (best) return best;
    // A write in this process moved a table to a newer version between the two reads (a seal
    // empties the recent table, an optimize compacts it): the row ids found are gone. Scores and
    // rows are read together instead, from one version of each table.
    const read = newestById(
      await lexicalCandidates(eng, chunks, terms, where, query.limit, "rows"),
    );
    return read.slice(0, query.limit).map(({ row, score }) => ({ ...(row as HitRow), score }));
  }
  const depth = Math.max(query.limit, settings.candidates);
  // Beside a vector, the lexical side searches the query's content words only: a match on
  // "our" or "with" alone is no evidence, and as a protected lexical hit it would sit above the
  // chunk that answers by meaning.
  const [lexical, vector] = await Promise.all([
    lexicalCandidates(eng, chunks, contentTerms(terms), where, depth, "ids").then(newestById),
    nearest(workspace, space, queryVector, where, depth, settings.minSimilarity),
  ]);
  const fused = fuse(
    lexical.map(({ id, score }) => ({ id: id as string, score })),
    vector,
    { limit: query.limit, protectedLexical: settings.protectedLexical, rrfK: RRF_K },
  );
  const byId = new Map(lexical.map((candidate) => [candidate.id as string, candidate]));
  const rows = new Map<string, HitRow>();
  for (const row of await takeRows(
    chunks,
    fused.flatMap(({ id }) => byId.get(id) ?? []),
  )) {
    if (row) rows.set(row.id, row);
  }
  const missing = fused.filter(({ id }) => !rows.has(id)).map(({ id }) => id);
  if (missing.length > 0) {
    const fetched = await Promise.all(
      chunks.map(
        (table) =>
          table
            .query()
            .where(`id IN (${missing.map(sqlString).join(", ")})`)
            .select(STORED_COLUMNS)
            .toArray() as Promise<StoredRow[]>,
      ),
    );
    for (const row of fetched.flat().map(plain)) rows.set(row.id, row);
  }
  return fused.flatMap(({ id, score }) => {
    const row = rows.get(id);
    return row ? [{ ...row, score }] : [];
  });
}

/**
 * A family's live tables as the registry lists them, oldest first; the chunk tables' full-text
 * indexes prewarmed (see `Prewarmer.warm`).
 */
async function familyTables(
  workspace: OpenWorkspace,
  family: string,
  prewarmMaxRows: number,
): Promise<LanceTable[]> {
  const registry = await readRegistry(workspace, false);
  const live = liveTables(registry.segments, family);
  if (family === CHUNKS_FAMILY) workspace.prewarmer.retain(new Set(live.map((s) => s.name)));
  const found = await Promise.all(
    live.map(async (segment) => {
      const table = await workspace.table(segment.name);
      if (!table) return [];
      if (family === CHUNKS_FAMILY) {
        const mutable = segment.level === RECENT_LEVEL;
        await workspace.prewarmer.warm(segment.name, table, prewarmMaxRows, mutable);
      }
      return [table];
    }),
  );
  return found.flat();
}

/** A lexical match: which table and row, its score, and its chunk id or row when asked for. */
interface Candidate {
  /** The table's position among the family's live tables (higher: newer). */
  table: number;
  rowId: bigint;
  score: number;
  id?: string;
  row?: HitRow;
}

/** What a lexical search reads of its matches besides their scores and row ids. */
type Read = "scores" | "ids" | "rows";
const READ_COLUMNS: Record<Read, string[]> = {
  scores: ["_score"],
  ids: ["id", "_score"],
  rows: [...STORED_COLUMNS, "_score"],
};

/**
 * BM25 over a family's chunk tables, each by its index alone (`fastSearch`: rows an index does
 * not hold yet are the ones 0.31 misranks), best first, at most `limit` a table. Each table
 * scores by its own statistics, so a chunk's score may differ a little from table to table. With
 * `scores`, only the row ids and scores are read: the index answers them, so a warm search reads
 * no row of a table whose hits do not make the cut (see `bestRows`); `ids` adds the chunk ids,
 * `rows` whole hits.
 */
async function lexicalCandidates(
  { lance }: Engine,
  chunks: LanceTable[],
  terms: string[],
  where: string | undefined,
  limit: number,
  read: Read,
): Promise<Candidate[]> {
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
    chunks.map(async (table, position) => {
      let search = table
        .search(query)
        .fastSearch()
        .withRowId()
        .select(READ_COLUMNS[read])
        .limit(limit);
      if (where) search = search.where(where);
      const rows = (await search.toArray()) as Array<
        Partial<StoredRow> & { _rowid: bigint; _score: number; id?: string }
      >;
      return rows.map((found): Candidate => {
        const candidate = {
          table: position,
          rowId: found._rowid,
          score: lexicalScore(found._score),
        };
        if (read === "ids") return { ...candidate, id: found.id as string };
        if (read === "scores") return candidate;
        const row = plain(found as StoredRow);
        return { ...candidate, id: row.id, row };
      });
    }),
  );
  return found.flat().sort((a, b) => b.score - a.score);
}

/**
 * A seal or merge copies rows before the old copies leave, and a write adds a source's new rows
 * before its old ones leave: an id found in several tables counts once, from the newest table.
 */
function newestById<T extends { table: number; id?: string }>(found: T[]): T[] {
  const newest = new Map<string, T>();
  for (const item of found) {
    const held = newest.get(item.id as string);
    if (!held || item.table > held.table) newest.set(item.id as string, item);
  }
  return found.filter((item) => newest.get(item.id as string) === item);
}

/**
 * The rows of the best `limit` candidates, best first, each chunk once: only the winners' rows
 * are read. A chunk held by two tables for a moment (see `newestById`) takes two places among
 * the candidates; the next ones are read to fill the cut. Undefined when a candidate's row is no
 * longer at its row id (its table moved on since the candidates were found).
 */
async function bestRows(
  chunks: LanceTable[],
  ranked: Candidate[],
  limit: number,
): Promise<SearchHit[] | undefined> {
  const hits: Array<SearchHit & { table: number }> = [];
  let next = 0;
  while (next < ranked.length) {
    const wanted = limit - new Set(hits.map((hit) => hit.id)).size;
    if (wanted <= 0) break;
    const batch = ranked.slice(next, next + wanted);
    next += batch.length;
    const rows = await takeRows(chunks, batch);
    if (rows.includes(undefined)) return undefined;
    batch.forEach((candidate, i) => {
      hits.push({ ...(rows[i] as HitRow), score: candidate.score, table: candidate.table });
    });
  }
  return newestById(hits)
    .sort((a, b) => b.score - a.score)
    .slice(0, limit)
    .map(({ table: _table, ...hit }) => hit);
}

/**
 * The hit columns of candidates' rows, in the candidates' order: undefined where one is gone, or
 * where its table's version holds its row id no more (the engine may refuse a take of a file a
 * compaction replaced).
 */
async function takeRows(
  chunks: LanceTable[],
  candidates: readonly Candidate[],
): Promise<Array<HitRow | undefined>> {
  const byTable = new Map<number, bigint[]>();
  for (const { table, rowId } of candidates) {
    byTable.set(table, [...(byTable.get(table) ?? []), rowId]);
  }
  const rows = new Map<string, HitRow>();
  await Promise.all(
    [...byTable].map(async ([position, rowIds]) => {
      const table = chunks[position] as LanceTable;
      const found = (await table
        .takeRowIds(rowIds)
        .withRowId()
        .select(STORED_COLUMNS)
        .toArray()
        .catch(() => [])) as Array<StoredRow & { _rowid: bigint }>;
      for (const row of found) rows.set(`${position}:${row._rowid}`, plain(row));
    }),
  );
  return candidates.map(({ table, rowId }) => rows.get(`${table}:${rowId}`));
}

/** The nearest vectors over a space's tables, best first; an id in several counts once. */
async function nearest(
  workspace: OpenWorkspace,
  space: string,
  vector: Float32Array | readonly number[],
  where: string | undefined,
  limit: number,
  minSimilarity: number,
): Promise<Ranked[]> {
  const tables = await familyTables(workspace, vectorsFamily(space), 0);
  const found = await Promise.all(
    tables.map((table) => {
      let search = table
        .vectorSearch(Array.from(vector))
        .distanceType("cosine")
        .select(["id", "_distance"])
        .limit(limit);
      if (where) search = search.where(where);
      return search.toArray() as Promise<Array<{ id: string; _distance: number }>>;
    }),
  );
  const best = new Map<string, number>();
  for (const row of found.flat()) best.set(row.id, vectorScore(row._distance));
  return [...best]
    .map(([id, score]) => ({ id, score }))
    .filter((hit) => hit.score >= minSimilarity)
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
}

/** A row of the engine's answer as a plain object with only the hit's columns. */
function plain(row: StoredRow): HitRow {
  return {
    id: chunkId(row.source_id, row.chunk_index),
    source_id: row.source_id,
    chunk_index: row.chunk_index,
    text: row.text,
    heading: row.heading,
    page: row.page,
  };
}
