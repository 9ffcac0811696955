import type { Table } from "../store/table.js";
import { failSource } from "./indexer.js";
import { INDEXING_PARTITION, type SourceItem } from "./sources.js";

/**
 * Fails sources that have been `indexing` for longer than `stallMs`: their message was lost, or
 * its last delivery crashed before the worker could record a result. Such a source would
 * otherwise stay `indexing` forever; failed, it tells the user to reindex.
 */
export async function failStalledSources(table: Table, stallMs: number, now = Date.now()) {
  const cutoff = new Date(now - stallMs).toISOString();
  const message = `Indexing made no progress for ${Math.round(stallMs / 60_000)} minutes; reindex to try again`;
  let failed = 0;
  for (;;) {
    const stalled = await table.queryIndex<SourceItem>("gsi1", INDEXING_PARTITION, cutoff, 100);
    let failedNow = 0;
    for (const source of stalled) {
      if (await failSource(table, source, "stalled", message)) failedNow++;
    }
    failed += failedNow;
    // A full page that failed nothing is the index lagging behind our own writes: stop here.
    if (stalled.length < 100 || failedNow === 0) return failed;
  }
}
