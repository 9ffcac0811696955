import type { StoredChunks } from "../../lib/knowledge/indexing/indexer.js";
import type { BenchContext, Row, Workspace } from "../core/figure.js";
import { interleave, time } from "../core/measure.js";
import { summarize } from "../core/stats.js";
import { words } from "./brute-force.js";
import type { SeededLevel } from "./seed.js";

/**
 * Figure 5's filtered search: a metadata filter that selects a few sources of a large workspace,
 * through `POST /api/knowledge/search`, beside the same queries unfiltered. The filter must be
 * applied inside the engine, before its top-k cut (decision 0013): applied to the hits after the
 * cut, it would keep almost none of them, since the few sources hold a tiny share of the chunks.
 * So every filtered answer is checked to be a full page of those sources' passages (or, for a
 * query their chunks cannot fill a page for, all the chunks holding one of its words), and a
 * short or foreign one fails the figure.
 */

/** How many sources the filter selects. */
export const FILTERED_SOURCES = 3;
const LIMIT = 10;
const SHELF = { key: "bench_shelf", value: "filtered" };

interface Hit {
  source_id: string;
}

/**
 * The rows of both cases, measured warm, query by query, `rounds` rounds interleaved, on a
 * seeded level; the filter picks a few of its sources, spread across it.
 */
export async function filteredSearchRows(
  ctx: BenchContext,
  workspace: Workspace,
  level: SeededLevel,
  queries: readonly string[],
  rounds: number,
  label: string,
): Promise<Row[]> {
  const { url } = await ctx.runtime();
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${workspace.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = await res.json();
    if (!res.ok)
      throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(answer)}`);
    return answer;
  };

  // Spread over the workspace: the first, the middle and the last source seeded.
  const step = (level.sourceIds.length - 1) / (FILTERED_SOURCES - 1);
  const picked = Array.from({ length: FILTERED_SOURCES }, (_, i) => Math.round(i * step));
  const chosen = new Set(picked.map((i) => level.sourceIds[i] as string));
  for (const id of chosen) {
    await call("PATCH", `/api/knowledge/${id}`, { metadata: { [SHELF.key]: SHELF.value } });
  }
  // What a correct filtered search must at least find for a query: the chosen sources' chunks
  // holding one of its words whole (search also matches longer words by prefix: more, not fewer).
  const { blobs } = await ctx.stores();
  const chunkWords = (
    await Promise.all(picked.map((i) => blobs.getJson<StoredChunks>(level.chunkKeys[i] as string)))
  ).flatMap((set) => set?.chunks.map((chunk) => new Set(words(chunk.text))) ?? []);
  const expected = new Map(
    queries.map((query) => {
      const terms = words(query);
      const holding = chunkWords.filter((set) => terms.some((term) => set.has(term))).length;
      return [query, Math.min(LIMIT, holding)];
    }),
  );

  const filters = { type: "eq", ...SHELF };
  const search = async (query: string, filtered: boolean) => {
    const body = { query, limit: LIMIT, ...(filtered ? { filters } : {}) };
    return ((await call("POST", "/api/knowledge/search", body)) as { results: Hit[] }).results;
  };
  /** Over every query of every round: hits from the chosen sources, and all hits. */
  const tally = { filtered: { chosen: 0, all: 0 }, unfiltered: { chosen: 0, all: 0 } };
  const perQuery = async (filtered: boolean) => {
    const samples: number[] = [];
    for (const query of queries) {
      let hits: Hit[] = [];
      samples.push(await time(async () => (hits = await search(query, filtered))));
      const mine = hits.filter((hit) => chosen.has(hit.source_id)).length;
      const counts = tally[filtered ? "filtered" : "unfiltered"];
      counts.chosen += mine;
      counts.all += hits.length;
      const least = expected.get(query) ?? LIMIT;
      if (filtered && (mine !== hits.length || mine < least)) {
        throw new Error(
          `The filtered search for "${query}" answered ${hits.length} hits, ${mine} of them from ` +
            `the ${FILTERED_SOURCES} sources its filter selects, where those hold ${least} for ` +
            "a top 10: the filter was not applied before the engine's cut",
        );
      }
    }
    return samples;
  };

  // Untimed: the API opens the workspace's index and reads its source records on a first search.
  await search(queries[0] ?? "", false);
  await search(queries[0] ?? "", true);
  const measured = await interleave(rounds, {
    unfiltered: () => perQuery(false),
    filtered: () => perQuery(true),
  });
  // What the chosen sources can give over all those searches: a correct filter finds all of it.
  const owed = rounds * [...expected.values()].reduce((sum, n) => sum + n, 0);
  const cells = (name: "filtered" | "unfiltered") => ({
    time: summarize(measured[name].flat()),
    chosen: `${tally[name].chosen.toLocaleString("en-US")} of ${tally[name].all.toLocaleString("en-US")}`,
    owed,
  });
  const floor = `${label}: POST /api/knowledge/search, unfiltered`;
  return [
    {
      name: `${label}: POST /api/knowledge/search, \`filters\` selecting ${FILTERED_SOURCES} sources`,
      floor,
      cells: cells("filtered"),
    },
    { name: floor, cells: cells("unfiltered") },
  ];
}
