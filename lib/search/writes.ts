import { engine } from "./engine.js";
import type { SearchSettings } from "./options.js";
import {
  CHUNKS_FAMILY,
  type ChunkRow,
  chunkRows,
  chunkSchema,
  isVectorFamily,
  type SourceDocument,
  type VectorRow,
  vectorRows,
  vectorSchema,
  vectorsFamily,
} from "./rows.js";
import { Tiers } from "./tiers.js";
import { checkWorkspace, type Workspaces } from "./workspaces.js";

/**
 * Writes of sources' rows into the workspace's tiers (see `tiers.ts`), under its writer lock,
 * because on S3 without conditional writes two concurrent commits can silently lose one.
 */

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

/**
 * Writes documents' rows, the caller holding the workspace's writer lock. Each family (the
 * chunks, each space's vectors) loses the sources' old rows, and gains the new ones in its recent
 * table. `maintain` indexes them at once and seals and merges what has grown (a write's cost is
 * bounded by `foldAfterRows` and one merge, whatever the workspace's size); without it (a bulk
 * load) the rows wait, unsearchable, for `optimizeWorkspace`.
 */
export async function writeLocked(
  settings: SearchSettings,
  workspaces: Workspaces,
  workspaceId: string,
  documents: readonly SourceDocument[],
  maintain: boolean,
): Promise<void> {
  if (documents.length === 0) return;
  const eng = await engine();
  const sourceIds = documents.map((d) => d.source.id);
  const rows = new Map<string, Array<ChunkRow | VectorRow>>([
    [CHUNKS_FAMILY, documents.flatMap(chunkRows)],
  ]);
  for (const document of documents) {
    if (!document.vectors) continue;
    const family = vectorsFamily(document.vectors.space);
    rows.set(family, [...(rows.get(family) ?? []), ...vectorRows(document)]);
  }
  const tiers = await Tiers.open(eng, await workspaces.get(workspaceId), settings);
  // Families that exist lose the sources' old rows unless new ones are given.
  for (const family of new Set([...rows.keys(), ...tiers.families()])) {
    const written = rows.get(family) ?? [];
    // Asked only when the family's first rows create its recent table.
    const schema = () =>
      isVectorFamily(family)
        ? vectorSchema(eng, (written[0] as VectorRow).vector.length)
        : chunkSchema(eng);
    await tiers.replace(family, written, sourceIds, schema, maintain);
  }
  if (maintain) await tiers.maintain(false);
}
