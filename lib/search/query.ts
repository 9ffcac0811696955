import type { Table as LanceTable } from "@lancedb/lancedb";
import { type Engine, engine } from "./engine.js";
import { type SearchFilters, sqlString, wherePredicate } from "./filters.js";
import type { SearchSettings } from "./options.js";
import { CHUNKS_FAMILY, HEADING_TERMS, TEXT_TERMS, vectorsFamily } from "./rows.js";
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
const HIT_COLUMNS = ["id", "source_id", "chunk_index", "text", "heading", "page"];
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
    const lexical = await lexicalHits(eng, chunks, terms, where, query.limit);
    return lexical.map(({ row, score }) => ({ ...row, score }));
  }
  const depth = Math.max(query.limit, settings.candidates);
  // Beside a vector, the lexical side searches the query's content words only: a match on
  // "our" or "with" alone is no evidence, and as a protected lexical hit it would sit above the
  // chunk that answers by meaning.
  const [lexical, vector] = await Promise.all([
    lexicalHits(eng, chunks, contentTerms(terms), where, depth),
    nearest(workspace, space, queryVector, where, depth, settings.minSimilarity),
  ]);
  const rows = new Map(lexical.map(({ row }) => [row.id, row]));
  const fused = fuse(
    lexical.map(({ row, score }) => ({ id: row.id, score })),
    vector,
    {
      limit: query.limit,
      protectedLexical: settings.protectedLexical,
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
  const found = await Promise.all(
    liveTables(registry.segments, family).map(async (segment) => {
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

/**
 * BM25 over a family's chunk tables, each by its index alone (`fastSearch`: rows an index does
 * not hold yet are the ones 0.31 misranks). Each table scores by its own statistics, so a chunk's
 * score may differ a little from table to table.
 */
async function lexicalHits(
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
  // A seal or merge copies rows before the old copies leave, and a write adds a source's new rows
  // before its old ones leave: an id found in several tables counts once, from the newest.
  const hits = new Map<string, { row: HitRow; score: number }>();
  for (const row of found.flat()) {
    hits.set(row.id, { row: plain(row), score: lexicalScore(row._score) });
  }
  return [...hits.values()].sort((a, b) => b.score - a.score).slice(0, limit);
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
