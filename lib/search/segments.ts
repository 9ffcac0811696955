import type { Table as LanceTable } from "@lancedb/lancedb";
import type { Engine } from "./engine.js";
import {
  CHUNKS_FAMILY,
  LEGACY_SPACES_TABLE,
  type Registry,
  recentTable,
  SEGMENTS_TABLE,
  type Segment,
} from "./rows.js";
import type { OpenWorkspace } from "./workspaces.js";

/**
 * The registry of a workspace's tables (`segments`): which tables hold each family's rows (the
 * chunks, or one embedding space's vectors), at which level, and which sources each holds. It is
 * what makes the index tiered (see `tiers.ts`): a family is one small mutable `recent` table
 * (level -1) and immutable segments, and a change of segments (a seal, a merge) is one commit of
 * this registry, so a search sees either the segments before it or after it, never a mix that
 * lacks rows. Listing the store instead would not do: not every S3-compatible store answers the
 * engine's listing (s3rver lists nothing), and a listing is not atomic.
 */

/** The level of a family's mutable table, which takes every write. */
export const RECENT_LEVEL = -1;
/** The level of a table carried over from the layout before the registry: never merged. */
const LEGACY_LEVEL = 99;

interface SegmentRow {
  name: string;
  family: string;
  level: number;
  rows: number;
  sources: string;
  retired_at: number;
}

export function segmentsSchema({ arrow }: Engine) {
  const { Field, Float64, Int32, Schema, Utf8 } = arrow;
  return new Schema([
    new Field("name", new Utf8(), false),
    new Field("family", new Utf8(), false),
    new Field("level", new Int32(), false),
    new Field("rows", new Int32(), false),
    new Field("sources", new Utf8(), false),
    new Field("retired_at", new Float64(), false),
  ]);
}

const toRow = (segment: Segment): SegmentRow => ({
  name: segment.name,
  family: segment.family,
  level: segment.level,
  rows: segment.rows,
  sources: segment.sources.join("\n"),
  retired_at: segment.retiredAt,
});

const fromRow = (row: SegmentRow): Segment => ({
  name: row.name,
  family: row.family,
  level: row.level,
  rows: row.rows,
  sources: row.sources ? row.sources.split("\n") : [],
  retiredAt: row.retired_at,
});

/**
 * A family's tables that serve searches: its segments, oldest first (names sort by creation),
 * then its recent table, whose rows are the newest.
 */
export function liveTables(segments: readonly Segment[], family: string): Segment[] {
  return segments
    .filter((s) => s.family === family && s.retiredAt === 0)
    .sort(
      (a, b) =>
        Number(a.level === RECENT_LEVEL) - Number(b.level === RECENT_LEVEL) ||
        a.name.localeCompare(b.name),
    );
}

/**
 * Reads the registry at the table's current version, reusing the last read of the same version.
 * A workspace written before the registry existed is read as its old tables (see `adopted`).
 */
export async function readRegistry(
  workspace: OpenWorkspace,
  withSources: boolean,
): Promise<Registry> {
  const table = await workspace.table(SEGMENTS_TABLE);
  if (!table) return { segments: await adopted(workspace), version: undefined };
  const version = await table.version();
  const cached = workspace.registry;
  if (cached && cached.registry.version === version && (cached.withSources || !withSources)) {
    return cached.registry;
  }
  const columns = ["name", "family", "level", "rows", "retired_at"];
  const rows = (await table
    .query()
    .select(withSources ? [...columns, "sources"] : columns)
    .toArray()) as SegmentRow[];
  const registry: Registry = {
    segments: rows.map((row) => fromRow({ ...row, sources: row.sources ?? "" })),
    version,
  };
  workspace.registry = { registry, withSources };
  return registry;
}

/**
 * Replaces the registry with `segments` in one commit: a search reads the registry before the
 * commit or after it, whole.
 */
export async function commitRegistry(
  eng: Engine,
  workspace: OpenWorkspace,
  segments: readonly Segment[],
): Promise<void> {
  const rows = segments.map(toRow);
  const table = await workspace.table(SEGMENTS_TABLE);
  if (!table) {
    const created = await workspace.db.createTable(
      SEGMENTS_TABLE,
      rows.map((row) => ({ ...row })),
      { schema: segmentsSchema(eng) },
    );
    workspace.tables.set(SEGMENTS_TABLE, Promise.resolve(created));
  } else if (rows.length === 0) {
    await table.checkoutLatest();
    await table.delete("true");
  } else {
    await table.checkoutLatest();
    await table
      .mergeInsert("name")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .whenNotMatchedBySourceDelete()
      .execute(rows.map((row) => ({ ...row })));
  }
  workspace.registry = undefined;
}

/**
 * The tables of a workspace indexed before the registry: its `chunks` table and the vector
 * tables its `spaces` table listed become segments, and `recent_chunks` its recent table, so
 * an index carried over from that layout answers at once. The first write records them.
 */
async function adopted(workspace: OpenWorkspace): Promise<Segment[]> {
  const [chunks, recent, spaces] = await Promise.all([
    workspace.table(CHUNKS_FAMILY),
    workspace.table(recentTable(CHUNKS_FAMILY)),
    workspace.table(LEGACY_SPACES_TABLE),
  ]);
  const vectorTables = spaces
    ? ((await spaces.query().select(["table"]).toArray()) as Array<{ table: string }>).map(
        (row) => row.table,
      )
    : [];
  const found: Segment[] = [];
  const adopt = async (name: string, table: LanceTable | undefined, level: number) => {
    if (!table) return;
    const rows = await table.countRows();
    const sources =
      level === RECENT_LEVEL
        ? []
        : [
            ...new Set(
              (
                (await table.query().select(["source_id"]).toArray()) as Array<{
                  source_id: string;
                }>
              ).map((row) => row.source_id),
            ),
          ].sort();
    const family = level === RECENT_LEVEL ? CHUNKS_FAMILY : name;
    found.push({ name, family, level, rows, sources, retiredAt: 0 });
  };
  await adopt(CHUNKS_FAMILY, chunks, LEGACY_LEVEL);
  await adopt(recentTable(CHUNKS_FAMILY), recent, RECENT_LEVEL);
  for (const name of vectorTables) await adopt(name, await workspace.table(name), LEGACY_LEVEL);
  return found;
}
