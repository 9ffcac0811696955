import type { Table as LanceTable } from "@lancedb/lancedb";
import type { Schema } from "apache-arrow";
import type { Engine } from "./engine.js";
import {
  chunkSchema,
  INDEXED_COLUMNS,
  indexName,
  SPACES_TABLE,
  spacesSchema,
  type VectorRow,
} from "./rows.js";
import type { OpenWorkspace } from "./workspaces.js";

/**
 * A workspace's tables as a write finds them: created on first use with their indexes, and the
 * registry of its vector tables.
 */

/** A table of chunks, created empty with its indexes if the workspace has none yet. */
export async function chunkTable(
  eng: Engine,
  workspace: OpenWorkspace,
  name: string,
): Promise<LanceTable> {
  const table = await workspace.table(name);
  if (table) return table;
  const created = await createTable(eng, workspace, name, [], chunkSchema(eng));
  const { Index } = eng.lance;
  for (const column of INDEXED_COLUMNS) {
    await created.createIndex(column, {
      config: Index.fts({
        baseTokenizer: "whitespace",
        lowercase: false,
        stem: false,
        removeStopWords: false,
        asciiFolding: false,
        withPosition: false,
      }),
      name: indexName(column),
    });
  }
  return created;
}

/**
 * Creates a table with a B-tree on the id: a write's merge finds the rows it replaces through
 * it, and hybrid search fetches vector hits' text by id, both without scanning the table.
 */
export async function createTable(
  { lance }: Engine,
  workspace: OpenWorkspace,
  name: string,
  rows: VectorRow[],
  schema: Schema,
): Promise<LanceTable> {
  const table = await workspace.db.createTable(
    name,
    rows.map((row) => ({ ...row })),
    { schema },
  );
  await table.createIndex("id", { config: lance.Index.btree(), name: indexName("id") });
  workspace.tables.set(name, Promise.resolve(table));
  return table;
}

/** The workspace's vector tables, as its registry lists them, and the tables named. */
export async function spaces(
  workspace: OpenWorkspace,
  names: Iterable<string>,
): Promise<Set<string>> {
  const registry = await workspace.table(SPACES_TABLE);
  if (!registry) return new Set(names);
  await registry.checkoutLatest();
  const rows = (await registry.query().select(["table"]).toArray()) as Array<{ table: string }>;
  return new Set([...names, ...rows.map((row) => row.table)]);
}

/** Records vector tables about to be written for the first time in the workspace's registry. */
export async function register(
  eng: Engine,
  workspace: OpenWorkspace,
  names: string[],
): Promise<void> {
  const known = await spaces(workspace, []);
  const fresh = names.filter((name) => !known.has(name)).map((table) => ({ table }));
  if (fresh.length === 0) return;
  const registry = await workspace.table(SPACES_TABLE);
  if (registry) await registry.add(fresh);
  else {
    const created = await workspace.db.createTable(SPACES_TABLE, fresh, {
      schema: spacesSchema(eng),
    });
    workspace.tables.set(SPACES_TABLE, Promise.resolve(created));
  }
}
