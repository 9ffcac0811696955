import type { Table as LanceTable } from "@lancedb/lancedb";
import { logger } from "../log.js";
import { INDEXED_COLUMNS, indexName, TEXT_TERMS } from "./rows.js";

/** A workspace's chunk tables whose full-text indexes are held whole in the engine's cache. */
export class Prewarmer {
  /** Per chunk table, the version `warm` last looked at, and the rows its index held. */
  private readonly warmed = new Map<string, { version: number; indexedRows: Promise<number> }>();

  /**
   * Holds a chunk table's full-text indexes whole in the engine's cache, when it has at most
   * `maxRows` rows, so that a warm search reads only its hits' rows from the store: LanceDB 0.31
   * otherwise reads the index's posting lists and document table on every search (see
   * docs/decisions/0001-search-engine.md). Each version of a table is looked at once, and
   * prewarmed when a search first sees the table, and then: a recent table (`mutable`) at every
   * version, as every write that adds rows to it rebuilds its index (and it is small); a segment
   * never again, as it only loses rows, by deletion files that leave the cached index valid.
   * Searches of a version wait for its prewarm, about a quarter of a second at 100k rows on the
   * S3 emulator. A prewarm that fails costs speed, never a result.
   */
  async warm(name: string, table: LanceTable, maxRows: number, mutable: boolean): Promise<void> {
    const version = await table.version();
    let known = this.warmed.get(name);
    if (known?.version !== version) {
      const indexedRows = this.prewarm(name, table, maxRows, mutable, known?.indexedRows);
      known = { version, indexedRows };
      this.warmed.set(name, known);
    }
    await known.indexedRows;
  }

  /** Forgets the tables not among `live` (a merge dropped them), so the map follows the index. */
  retain(live: ReadonlySet<string>): void {
    for (const name of this.warmed.keys()) if (!live.has(name)) this.warmed.delete(name);
  }

  /** Prewarms a version as `warm` says; answers the rows its index holds (-1: not prewarmed). */
  private async prewarm(
    name: string,
    table: LanceTable,
    maxRows: number,
    mutable: boolean,
    previous: Promise<number> | undefined,
  ): Promise<number> {
    try {
      const [rows, before] = await Promise.all([table.countRows(), previous ?? -1]);
      if (rows === 0 || rows > maxRows) return -1;
      const stats = await table.indexStats(indexName(TEXT_TERMS));
      const indexedRows = stats?.numIndexedRows ?? 0;
      if (mutable || indexedRows > before) {
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
}
