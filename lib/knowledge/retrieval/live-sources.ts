import { LRUCache } from "lru-cache";
import { type Item, type Table, wsKey } from "../../store/table.js";
import { crawlSourceIds } from "../crawl/frontier.js";
import { GENERATION_SK, isSearchable, SOURCE_PREFIX, type SourceItem } from "../sources/sources.js";
import { FILTER_FIELDS } from "./filter-expression.js";

/** What search reads of each source: whether it is live, what results show, what filters match. */
const FIELDS = [
  "id",
  "status",
  "enabled",
  "chunks_key",
  "name",
  "source_url_or_path",
  ...FILTER_FIELDS,
];

/** A workspace's sources as search sees them. */
export interface WorkspaceSources {
  /** Enabled, with an indexed revision (`isSearchable`): the only sources retrieval may return. */
  live: SourceItem[];
  /** Every other source's id (disabled, indexing, failed): excluded inside the engine. */
  hidden: string[];
  /** The workspace's counter when they were listed: the index holds every change it counts. */
  generation: number;
}

/**
 * The sources of each workspace, split into what search may return and what it must not. Cached
 * per process; each search costs one consistent read of the workspace's counter, and the sources
 * are listed again only when it moved (before, every search listed every source).
 */
export class LiveSources {
  /** No age limit: the counter says when an entry is stale. */
  private readonly cache: LRUCache<string, WorkspaceSources>;

  constructor(
    private readonly table: Table,
    maxWorkspaces = 100,
  ) {
    this.cache = new LRUCache({ max: maxWorkspaces });
  }

  /** The sources the given crawls indexed or refreshed: what a `crawl_id` scope searches. */
  ofCrawls(workspaceId: string, crawlIds: readonly string[]): Promise<Set<string>> {
    return crawlSourceIds(this.table, workspaceId, crawlIds);
  }

  async of(workspaceId: string): Promise<WorkspaceSources> {
    const counter = await this.table.get<Item & { generation?: number }>(
      wsKey(workspaceId),
      GENERATION_SK,
    );
    const generation = counter?.generation ?? 0;
    const cached = this.cache.get(workspaceId);
    if (cached && cached.generation === generation) return cached;
    const sources: WorkspaceSources = { live: [], hidden: [], generation };
    for (const source of await this.table.all<SourceItem>(
      wsKey(workspaceId),
      SOURCE_PREFIX,
      FIELDS,
    )) {
      if (isSearchable(source)) sources.live.push(source);
      else sources.hidden.push(source.id);
    }
    this.cache.set(workspaceId, sources);
    return sources;
  }
}
