import type { Table as LanceTable } from "@lancedb/lancedb";
import { type Engine, engine } from "./engine.js";
import { type SearchFilters, sqlString, wherePredicate } from "./filters.js";
import type { SearchSettings } from "./options.js";
import {
  CHUNKS_TABLE,
  HEADING_TERMS,
  RECENT_CHUNKS_TABLE,
  TEXT_TERMS,
  vectorsTable,
} from "./rows.js";
import { fuse, lexicalScore, type Ranked, vectorScore } from "./scores.js";
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
  const eng = await engine();
  const workspace = await workspaces.get(workspaceId);
  await workspace.catchUp(query.generation);
  const chunks = await searchable(workspace, settings.prewarmMaxRows);
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

/** The workspace's chunk tables, their indexes prewarmed (see `Prewarmer.warm`). */
async function searchable(workspace: OpenWorkspace, prewarmMaxRows: number): Promise<LanceTable[]> {
  const found = await Promise.all(
    [CHUNKS_TABLE, RECENT_CHUNKS_TABLE].map(async (name) => {
      const table = await workspace.table(name);
      if (!table) return [];
      await workspace.prewarmer.warm(name, table, prewarmMaxRows);
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
  // A fold copies rows before it deletes them: an id found in both tables counts once.
  const hits = new Map<string, { row: HitRow; score: number }>();
  for (const row of found.flat()) {
    hits.set(row.id, { row: plain(row), score: lexicalScore(row._score) });
  }
  return [...hits.values()].sort((a, b) => b.score - a.score).slice(0, limit);
}

async function nearest(
  workspace: OpenWorkspace,
  space: string,
  vector: Float32Array | readonly number[],
  where: string | undefined,
  limit: number,
  minSimilarity: number,
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
    .filter((hit) => hit.score >= minSimilarity);
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
