import type { Table as LanceTable } from "@lancedb/lancedb";
import { type Engine, engine } from "./engine.js";
import { sqlString } from "./filters.js";
import { fold, keepSince, maintainVectors } from "./maintenance.js";
import type { SearchSettings } from "./options.js";
import {
  CHUNKS_TABLE,
  type ChunkRow,
  chunkRows,
  RECENT_CHUNKS_TABLE,
  type SourceDocument,
  type VectorRow,
  vectorRows,
  vectorSchema,
  vectorsTable,
} from "./rows.js";
import { chunkTable, createTable, register, spaces } from "./tables.js";
import { checkWorkspace, type OpenWorkspace, type Workspaces } from "./workspaces.js";

/**
 * Writes of sources' rows: each replaces the sources' rows in one commit per table, under the
 * workspace's writer lock, because on S3 without conditional writes two concurrent commits can
 * silently lose one.
 */

/** `source_id IN (...)` for the sources a write replaces. */
const ofSources = (sourceIds: readonly string[]) =>
  `source_id IN (${sourceIds.map(sqlString).join(", ")})`;

/**
 * Replaces sources' rows under the workspace's writer lock; with a `precondition`, checked under
 * the lock, nothing is written when it answers false. Answers whether the rows were written.
 */
export async function writeSources(
  settings: SearchSettings,
  workspaces: Workspaces,
  workspaceId: string,
  documents: readonly SourceDocument[],
  options: { maintain?: boolean; precondition?: () => Promise<boolean> },
): Promise<boolean> {
  checkWorkspace(workspaceId);
  if (documents.length === 0) return true;
  return settings.lock.withLock(workspaceId, async () => {
    if (options.precondition && !(await options.precondition())) return false;
    await writeLocked(settings, workspaces, workspaceId, documents, options.maintain !== false);
    return true;
  });
}

/** Writes documents' rows, the caller holding the workspace's writer lock. */
export async function writeLocked(
  settings: SearchSettings,
  workspaces: Workspaces,
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
  const workspace = await workspaces.get(workspaceId);
  await writeChunks(eng, workspace, chunks, sourceIds, maintain, settings.foldAfterRows);
  // Spaces that exist lose the sources' old vectors unless new ones are given; new spaces
  // are registered, then created.
  await register(eng, workspace, [...bySpace.keys()]);
  const written: LanceTable[] = [];
  for (const name of await spaces(workspace, bySpace.keys())) {
    const table = await writeVectors(eng, workspace, name, bySpace.get(name) ?? [], sourceIds);
    if (table) written.push(table);
  }
  if (maintain) for (const table of written) await maintainVectors(eng, table, false, settings);
}

/**
 * Writes sources' chunks so that a write costs the sources' rows, not the corpus. LanceDB 0.31
 * misranks and drops rows its full-text index does not hold yet, and indexing new rows means an
 * optimize, which compacts the whole table (see docs/decisions/0001-search-engine.md). So the
 * chunks live in two tables, each
 * searched by its index alone: `chunks`, the bulk, which a write only deletes from (no rewrite),
 * and `recent_chunks`, which takes the write's rows and is optimized at once, a cost bounded by
 * its size. Once it holds `foldAfterRows` rows they move into `chunks` (`fold`), the one step
 * that costs the corpus, paid once per that many rows. A bulk load (`maintain: false`) writes
 * into `chunks` directly, searchable once `optimize` has indexed it.
 */
async function writeChunks(
  eng: Engine,
  workspace: OpenWorkspace,
  rows: ChunkRow[],
  sourceIds: readonly string[],
  maintain: boolean,
  foldAfterRows: number,
): Promise<void> {
  const [chunks, recent] = await Promise.all([
    chunkTable(eng, workspace, CHUNKS_TABLE),
    chunkTable(eng, workspace, RECENT_CHUNKS_TABLE),
  ]);
  const [target, other] = maintain ? [recent, chunks] : [chunks, recent];
  await replaceRows(target, rows, sourceIds);
  if (maintain && rows.length > 0) await recent.optimize({ cleanupOlderThan: keepSince() });
  // The new rows are searchable before the old ones leave: a search meanwhile may see a
  // source's old and new chunks (the same id counts once, the recent one), never neither.
  await other.checkoutLatest();
  await other.delete(ofSources(sourceIds));
  if (maintain && (await recent.countRows()) >= foldAfterRows) {
    await fold(chunks, recent, foldAfterRows);
  }
}

/**
 * Writes one vector table's rows of the given sources (see `replaceRows`), creating the table
 * with its id index on its first rows (their length is the space's dimensions). Answers the
 * table, if there is one.
 */
async function writeVectors(
  eng: Engine,
  workspace: OpenWorkspace,
  name: string,
  rows: VectorRow[],
  sourceIds: readonly string[],
): Promise<LanceTable | undefined> {
  const table = await workspace.table(name);
  if (table) await replaceRows(table, rows, sourceIds);
  else if (rows[0]) {
    return createTable(eng, workspace, name, rows, vectorSchema(eng, rows[0].vector.length));
  }
  return table;
}

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
