/** Which chunks a search may return; every list given narrows it, an absent one does not. */
export interface SearchFilters {
  /** Only these sources; an empty list matches nothing. */
  sourceIds?: readonly string[];
  /** Only sources of these types (`text`, `url`, `file`). */
  types?: readonly string[];
  /** Never these sources (disabled ones, for instance). */
  excludeSourceIds?: readonly string[];
}

/**
 * A string as an SQL literal: single quotes doubled, nothing else is special (the engine's SQL,
 * DataFusion, reads backslashes literally), so no value can end the literal early.
 */
export const sqlString = (value: string) => `'${value.replaceAll("'", "''")}'`;

const inList = (column: string, values: readonly string[], negate = false) =>
  `${column} ${negate ? "NOT IN" : "IN"} (${values.map(sqlString).join(", ")})`;

/**
 * The filters as one SQL predicate the engine applies before ranking (a prefilter, so a top-k cut
 * never drops matches the filter would keep): undefined when nothing is filtered, null when the
 * filters can match nothing (an empty list to keep from).
 */
export function wherePredicate(filters: SearchFilters = {}): string | undefined | null {
  const clauses: string[] = [];
  for (const [column, values] of [
    ["source_id", filters.sourceIds],
    ["type", filters.types],
  ] as const) {
    if (values === undefined) continue;
    if (values.length === 0) return null;
    clauses.push(inList(column, values));
  }
  if (filters.excludeSourceIds && filters.excludeSourceIds.length > 0) {
    clauses.push(inList("source_id", filters.excludeSourceIds, true));
  }
  return clauses.length > 0 ? clauses.join(" AND ") : undefined;
}
