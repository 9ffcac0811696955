import { type Item, type Table, wsKey } from "../store/table.js";
import { SOURCE_PREFIX, type SourceItem } from "./sources.js";

/**
 * A counter per workspace that moves whenever the set of searchable sources may have changed: a
 * source indexed, reindexed, enabled, disabled or deleted. Writers bump it after their own write,
 * so a reader that sees the new value also sees the change.
 */
const GENERATION_SK = "KBGEN";

export async function bumpLiveSources(table: Table, workspaceId: string): Promise<void> {
  await table.increment(wsKey(workspaceId), GENERATION_SK, "generation", 1);
}

const FIELDS = [
  "id",
  "status",
  "enabled",
  "chunks_key",
  "indexed_at",
  "name",
  "source_url_or_path",
];

/**
 * The enabled, indexed sources of each workspace: the only ones retrieval may ever return.
 * Cached per process; each search costs one consistent read of the workspace's counter, and the
 * sources are listed again only when it moved (before, every search listed every source).
 */
export class LiveSources {
  private readonly cache = new Map<string, { generation: number; sources: SourceItem[] }>();

  constructor(
    private readonly table: Table,
    private readonly maxWorkspaces = 100,
  ) {}

  async of(workspaceId: string): Promise<SourceItem[]> {
    const counter = await this.table.get<Item & { generation?: number }>(
      wsKey(workspaceId),
      GENERATION_SK,
    );
    const generation = counter?.generation ?? 0;
    const cached = this.cache.get(workspaceId);
    if (cached && cached.generation === generation) return cached.sources;
    const sources = (
      await this.table.all<SourceItem>(wsKey(workspaceId), SOURCE_PREFIX, FIELDS)
    ).filter((s) => s.status === "indexed" && s.enabled === 1 && s.chunks_key);
    this.cache.delete(workspaceId);
    this.cache.set(workspaceId, { generation, sources });
    if (this.cache.size > this.maxWorkspaces) {
      this.cache.delete(this.cache.keys().next().value as string);
    }
    return sources;
  }
}
