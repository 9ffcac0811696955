import type { Table as LanceTable } from "@lancedb/lancedb";
import type { Table as ArrowTable, Schema } from "apache-arrow";
import { ulid } from "ulid";
import type { Engine } from "./engine.js";
import { sqlString } from "./filters.js";
import type { SearchSettings } from "./options.js";
import {
  type ChunkRow,
  INDEXED_COLUMNS,
  indexName,
  isVectorFamily,
  recentTable,
  SEGMENTS_TABLE,
  type Segment,
  type VectorRow,
} from "./rows.js";
import { commitRegistry, liveTables, RECENT_LEVEL, readRegistry } from "./segments.js";
import type { OpenWorkspace } from "./workspaces.js";

/**
 * The tiered layout that keeps ingestion linear. LanceDB 0.31 answers only rows its full-text
 * index holds, and adding rows to an index means an optimize that rebuilds the table's whole
 * index and compacts its files (docs/decisions/0001-search-engine.md): one table written source by
 * source costs each write the whole corpus, and keeps a copy of it per version. So each family of
 * rows (the chunks, each space's vectors) is a small mutable `recent` table, which every write
 * replaces its sources in and indexes at once (a cost bounded by its size), and immutable
 * segments, each indexed once when written:
 *
 * - **Seal**: once the recent table holds `foldAfterRows` rows they become a level-0 segment.
 * - **Merge**: once a level holds `mergeFactor` segments, the oldest of them are rewritten as one
 *   segment of the next level (at most one merge a write, so no write waits for more than one).
 *   A row is rewritten about log_factor(corpus / foldAfterRows) times, as in Lucene's or Tantivy's
 *   tiered merges, not once per fold; segments stop merging at `maxSegmentRows`, which bounds the
 *   largest piece of work (and its memory) whatever the workspace's size.
 * - **Delete**: a source's rows leave a segment by a deletion file, no rewrite, and only the
 *   segments the registry lists the source in are touched.
 *
 * A seal or merge writes its new segment completely, indexes it, and only then commits the
 * registry, in one commit that also retires what it replaced; the replaced tables are dropped
 * `versionGraceSeconds` later, and old versions of the recent tables after the same grace, so
 * the bytes kept are bounded by the index's size, not by its history. A search reads one version
 * of the registry and searches its tables; a reader that still holds a table dropped or pruned
 * under it opens the workspace again and answers from the registry's latest (see `query.ts`).
 */

export type TierSettings = Pick<
  SearchSettings,
  | "foldAfterRows"
  | "mergeFactor"
  | "maxSegmentRows"
  | "vectorIndexAfterRows"
  | "versionGraceSeconds"
  | "copyBatchRows"
  | "segmentWriteRows"
>;

/** A segment's level: 0 below `foldAfterRows × mergeFactor` rows, one more per factor above. */
export function levelOf(rows: number, settings: TierSettings): number {
  let level = 0;
  for (let ceiling = settings.foldAfterRows * settings.mergeFactor; rows >= ceiling; level++) {
    ceiling *= settings.mergeFactor;
  }
  return level;
}

const ofSources = (sourceIds: readonly string[]) =>
  `source_id IN (${sourceIds.map(sqlString).join(", ")})`;

/** A workspace's tiers as one locked write changes them. Every method runs under the writer lock. */
export class Tiers {
  private segments: Segment[];
  /** Families whose recent table this write added rows to: the only ones that can need a seal. */
  private readonly grown = new Set<string>();

  private constructor(
    private readonly eng: Engine,
    private readonly workspace: OpenWorkspace,
    private readonly settings: TierSettings,
    segments: readonly Segment[],
    private readonly now: () => number,
  ) {
    this.segments = [...segments];
  }

  /** The workspace's tiers at the registry's latest version. */
  static async open(
    eng: Engine,
    workspace: OpenWorkspace,
    settings: TierSettings,
    now: () => number = Date.now,
  ): Promise<Tiers> {
    await (await workspace.table(SEGMENTS_TABLE))?.checkoutLatest();
    const registry = await readRegistry(workspace, true);
    return new Tiers(eng, workspace, settings, registry.segments, now);
  }

  /** Every family that has a table. */
  families(): string[] {
    return [...new Set(this.segments.map((s) => s.family))];
  }

  /**
   * Replaces the given sources' rows of a family: the new rows go into its recent table (indexed
   * at once unless `indexNow` is false, a bulk load's choice), or, when they are at least
   * `segmentWriteRows`, into a level-0 segment of their own (a large source, or many written
   * together, would only pass through the recent table to be copied out again at its seal). Then
   * the sources' older rows leave the tables that hold them. A search in between may see a
   * source's old and new rows (each chunk once, see `query.ts`), never neither.
   */
  async replace(
    family: string,
    rows: ReadonlyArray<ChunkRow | VectorRow>,
    sourceIds: readonly string[],
    schema: () => Schema,
    indexNow: boolean,
  ): Promise<void> {
    const written = new Set<string>();
    if (indexNow && rows.length >= this.settings.segmentWriteRows) {
      for (const segment of await this.writeSegments(family, rows, schema())) {
        written.add(segment.name);
      }
      const recent = await this.recent(family, undefined);
      if (recent) {
        await recent.checkoutLatest();
        await recent.delete(ofSources(sourceIds));
      }
    } else {
      const recent = await this.recent(family, rows.length > 0 ? schema : undefined);
      if (recent) {
        await recent.checkoutLatest();
        if (rows.length === 0) await recent.delete(ofSources(sourceIds));
        else {
          await recent
            .mergeInsert("id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .whenNotMatchedBySourceDelete({ where: ofSources(sourceIds) })
            .execute(rows.map((row) => ({ ...row })));
          if (indexNow) await this.reindex(family, recent);
          this.grown.add(family);
        }
      }
    }
    const replaced = new Set(sourceIds);
    for (const segment of this.live(family)) {
      if (segment.level === RECENT_LEVEL || written.has(segment.name)) continue;
      const held = segment.sources.filter((id) => replaced.has(id));
      if (held.length === 0) continue;
      const table = await this.table(segment.name);
      await table.checkoutLatest();
      await table.delete(ofSources(held));
    }
  }

  /** Writes rows as new level-0 segments (one unless past `maxSegmentRows`), registered. */
  private async writeSegments(
    family: string,
    rows: ReadonlyArray<ChunkRow | VectorRow>,
    schema: Schema,
  ): Promise<Segment[]> {
    const { makeArrowTable } = this.eng.lance;
    const batchRows = this.settings.copyBatchRows;
    const batches = (async function* () {
      for (let offset = 0; offset < rows.length; offset += batchRows) {
        const batch = rows.slice(offset, offset + batchRows).map((row) => ({ ...row }));
        yield makeArrowTable(batch, { schema });
      }
    })();
    const created: Segment[] = [];
    for (;;) {
      const segment = await this.write(family, schema, batches, this.settings.maxSegmentRows);
      if (!segment) break;
      created.push(segment);
    }
    this.segments.push(...created);
    await this.commit();
    return created;
  }

  /**
   * Seals every recent table that has reached `foldAfterRows` (every non-empty one when
   * `everything`), then merges: once, or while anything is left to merge when `everything`.
   * Drops what merges retired longer ago than the grace.
   */
  async maintain(everything: boolean): Promise<void> {
    for (const family of everything ? this.families() : this.grown) {
      const recent = this.segments.find((s) => s.family === family && s.level === RECENT_LEVEL);
      if (!recent) continue;
      const table = await this.table(recent.name);
      // A table this write added to is at its latest version already.
      if (everything) await table.checkoutLatest();
      const rows = await table.countRows();
      if (rows > 0 && (everything || rows >= this.settings.foldAfterRows)) {
        await this.seal(family, table);
      }
    }
    while ((await this.mergeOnce()) && everything) {}
    await this.dropRetired();
  }

  /**
   * Moves a recent table's rows into new level-0 segments (more than one only after a bulk load
   * of more than `maxSegmentRows`), then empties it.
   */
  private async seal(family: string, recent: LanceTable): Promise<void> {
    const rows = await recent.countRows();
    const batchRows = this.settings.copyBatchRows;
    const batches = (async function* () {
      for (let offset = 0; offset < rows; offset += batchRows) {
        yield await recent.query().offset(offset).limit(batchRows).toArrow();
      }
    })();
    const schema = await recent.schema();
    for (;;) {
      const segment = await this.write(family, schema, batches, this.settings.maxSegmentRows);
      if (!segment) break;
      this.segments.push(segment);
    }
    await this.commit();
    await recent.delete("true");
    await this.optimize(recentTable(family), recent);
  }

  /** Merges the oldest segments of the lowest level that has `mergeFactor` of them; answers whether it did. */
  private async mergeOnce(): Promise<boolean> {
    const { mergeFactor, maxSegmentRows } = this.settings;
    for (const family of this.families()) {
      const byLevel = new Map<number, Segment[]>();
      for (const segment of this.live(family)) {
        if (segment.level < 0) continue;
        byLevel.set(segment.level, [...(byLevel.get(segment.level) ?? []), segment]);
      }
      for (const level of [...byLevel.keys()].sort((a, b) => a - b)) {
        const inputs = (byLevel.get(level) ?? []).slice(0, mergeFactor);
        const total = inputs.reduce((sum, s) => sum + s.rows, 0);
        if (inputs.length < mergeFactor || total > maxSegmentRows) continue;
        await this.merge(family, inputs);
        return true;
      }
    }
    return false;
  }

  private async merge(family: string, inputs: Segment[]): Promise<void> {
    const tables = await Promise.all(inputs.map((s) => this.table(s.name)));
    const batchRows = this.settings.copyBatchRows;
    // Rows of several inputs go out together, a batch at a time: each batch becomes one file of
    // the segment, and a search reads each file a hit is in (a request per column on S3).
    const batches = (async function* () {
      let pending: ArrowTable[] = [];
      let pendingRows = 0;
      for (const table of tables) {
        await table.checkoutLatest();
        const rows = await table.countRows();
        for (let offset = 0; offset < rows; ) {
          const take = Math.min(batchRows - pendingRows, rows - offset);
          pending.push(await table.query().offset(offset).limit(take).toArrow());
          offset += take;
          pendingRows += take;
          if (pendingRows >= batchRows) {
            yield concatenated(pending);
            pending = [];
            pendingRows = 0;
          }
        }
      }
      if (pending.length > 0) yield concatenated(pending);
    })();
    const schema = await (tables[0] as LanceTable).schema();
    const merged = await this.write(family, schema, batches, Number.POSITIVE_INFINITY);
    const retiredAt = this.now();
    const replaced = new Set(inputs.map((s) => s.name));
    this.segments = this.segments.map((s) => (replaced.has(s.name) ? { ...s, retiredAt } : s));
    if (merged) this.segments.push(merged);
    await this.commit();
  }

  /**
   * Writes batches into a new segment table (up to `maxRows` rows; the rest stay in the
   * iterator), indexes it and answers its registry entry; undefined when there was nothing.
   */
  private async write(
    family: string,
    schema: Schema,
    batches: AsyncGenerator<ArrowTable>,
    maxRows: number,
  ): Promise<Segment | undefined> {
    const name = `${family}_${ulid().toLowerCase()}`;
    let table: LanceTable | undefined;
    let rows = 0;
    const sources = new Set<string>();
    while (rows < maxRows) {
      const next = await batches.next();
      if (next.done) break;
      const batch = next.value;
      if (batch.numRows === 0) continue;
      for (const id of batch.getChild("source_id")?.toArray() ?? []) sources.add(String(id));
      if (table) await table.add(batch);
      else {
        table = await this.workspace.db.createEmptyTable(name, schema);
        await table.add(batch);
      }
      rows += batch.numRows;
    }
    if (!table) return undefined;
    await this.index(family, table, rows);
    this.workspace.tables.set(name, Promise.resolve(table));
    return {
      name,
      family,
      level: levelOf(rows, this.settings),
      rows,
      sources: [...sources].sort(),
      retiredAt: 0,
    };
  }

  /**
   * A segment's indexes: B-trees on the id (hybrid search fetches rows by id) and the source
   * (deletes find a source's rows without a scan); the full-text indexes of a chunk segment; an
   * approximate vector index (IVF over RaBitQ-quantized vectors, 4 bits a dimension) for a vector
   * segment of at least `vectorIndexAfterRows`, smaller ones being scanned exactly. At 100k
   * vectors of 256 dimensions it built in about 4 s and found 85% of the exact top 10 in about
   * 3 ms (IVF-PQ took 270 s to build, HNSW 220 s, on a 2-core machine).
   */
  private async index(family: string, table: LanceTable, rows: number): Promise<void> {
    const { Index } = this.eng.lance;
    await table.createIndex("id", { config: Index.btree(), name: indexName("id") });
    await table.createIndex("source_id", { config: Index.btree(), name: indexName("source_id") });
    if (!isVectorFamily(family)) {
      for (const column of INDEXED_COLUMNS) {
        await table.createIndex(column, { config: fullText(this.eng), name: indexName(column) });
      }
    } else if (rows >= this.settings.vectorIndexAfterRows) {
      await table.createIndex("vector", {
        config: Index.ivfRq({ distanceType: "cosine", numBits: 4 }),
        name: indexName("vector"),
      });
    }
  }

  /** Drops the tables merges retired more than the grace ago: no reader can still want them. */
  private async dropRetired(): Promise<void> {
    const before = this.now() - this.settings.versionGraceSeconds * 1000;
    const expired = this.segments.filter((s) => s.retiredAt > 0 && s.retiredAt <= before);
    if (expired.length === 0) return;
    const gone = new Set(expired.map((s) => s.name));
    this.segments = this.segments.filter((s) => !gone.has(s.name));
    await this.commit();
    for (const { name } of expired) {
      this.workspace.tables.delete(name);
      await this.workspace.db.dropTable(name).catch((error: unknown) => {
        if (!(error instanceof Error && /was not found/.test(error.message))) throw error;
      });
    }
  }

  /**
   * Brings a recent table's indexes up to its rows. At most once a grace period (per table, in
   * this process) that is an optimize, which also compacts the table and removes its versions
   * older than the grace; in between, the indexes are rebuilt over its rows (at most
   * `foldAfterRows` and a write's), which costs a few requests where an optimize reads every
   * manifest the table kept (about a hundred during an import).
   */
  private async reindex(family: string, table: LanceTable): Promise<void> {
    const name = recentTable(family);
    const last = this.workspace.optimizedAt.get(name);
    if (last === undefined || this.now() - last >= this.settings.versionGraceSeconds * 1000) {
      await this.optimize(name, table);
      return;
    }
    if (!isVectorFamily(family)) {
      for (const column of INDEXED_COLUMNS) {
        await table.createIndex(column, {
          config: fullText(this.eng),
          name: indexName(column),
          replace: true,
        });
      }
    }
  }

  /**
   * Folds a recent table's new rows into its indexes and compacts it, removing versions older
   * than the grace: a reader holds a version at most `readConsistencySeconds` old.
   */
  private async optimize(name: string, table: LanceTable): Promise<void> {
    const now = this.now();
    await table.optimize({
      cleanupOlderThan: new Date(now - this.settings.versionGraceSeconds * 1000),
    });
    this.workspace.optimizedAt.set(name, now);
  }

  /** The family's recent table; created (and registered) when `schema` is given and there is none. */
  private async recent(
    family: string,
    schema: (() => Schema) | undefined,
  ): Promise<LanceTable | undefined> {
    const entry = this.segments.find((s) => s.family === family && s.level === RECENT_LEVEL);
    if (entry) return this.table(entry.name);
    if (!schema) return undefined;
    const name = recentTable(family);
    const table =
      (await this.workspace.table(name)) ??
      (await this.workspace.db.createEmptyTable(name, schema()));
    const { Index } = this.eng.lance;
    if (!(await table.indexStats(indexName("id")))) {
      await table.createIndex("id", { config: Index.btree(), name: indexName("id") });
      if (!isVectorFamily(family)) {
        for (const column of INDEXED_COLUMNS) {
          await table.createIndex(column, { config: fullText(this.eng), name: indexName(column) });
        }
      }
    }
    this.workspace.tables.set(name, Promise.resolve(table));
    // Registered before it holds rows, so no search can miss rows a write moves into it.
    this.segments.push({ name, family, level: RECENT_LEVEL, rows: 0, sources: [], retiredAt: 0 });
    await this.commit();
    return table;
  }

  private live(family: string): Segment[] {
    return liveTables(this.segments, family);
  }

  private async table(name: string): Promise<LanceTable> {
    const table = await this.workspace.table(name);
    if (!table) throw new Error(`The search index's table ${name} is registered but missing`);
    return table;
  }

  private async commit(): Promise<void> {
    await commitRegistry(this.eng, this.workspace, this.segments);
  }
}

const concatenated = (tables: ArrowTable[]): ArrowTable =>
  (tables[0] as ArrowTable).concat(...tables.slice(1));

/** The full-text index of a chunk column: the terms are prepared by `terms.ts`, split on spaces. */
function fullText({ lance }: Engine) {
  return lance.Index.fts({
    baseTokenizer: "whitespace",
    lowercase: false,
    stem: false,
    removeStopWords: false,
    asciiFolding: false,
    withPosition: false,
  });
}
