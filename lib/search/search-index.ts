import { dropWorkspace, holdsWorkspace } from "./drop.js";
import { GroupCommit } from "./group-commit.js";
import { optimizeWorkspace } from "./maintenance.js";
import { type SearchIndexOptions, type SearchSettings, withDefaults } from "./options.js";
import { type SearchHit, type SearchQuery, searchWorkspace } from "./query.js";
import type { SourceDocument } from "./rows.js";
import { Workspaces } from "./workspaces.js";
import { writeLocked, writeSources } from "./writes.js";

/**
 * The search index of every workspace, as one process holds it. Open workspaces (a connection and
 * table handles, no rows) are kept for the next search, the least recently used dropped past
 * `openWorkspacesBytes`; the engine's caches of index pages and metadata are one session shared by
 * all of them and by the process's other indexes, bounded by `indexCacheBytes`, so memory grows
 * neither with the corpus nor with the functions a process runs.
 */
export class SearchIndex {
  private readonly settings: SearchSettings;
  private readonly workspaces: Workspaces;
  private readonly groupCommit: GroupCommit;

  constructor(options: SearchIndexOptions) {
    this.settings = withDefaults(options);
    this.workspaces = new Workspaces(this.settings);
    this.groupCommit = new GroupCommit(this.settings.lock, (workspaceId, documents) =>
      writeLocked(this.settings, this.workspaces, workspaceId, documents, true),
    );
  }

  /**
   * Replaces one source's rows: its chunks, and its vectors in the space given (if any). With a
   * `precondition`, checked under the writer lock, nothing is written when it answers false (the
   * caller's revision was replaced meanwhile); answers whether the rows were written. Writes
   * waiting for the lock in this process go in together (see `GroupCommit`).
   */
  replaceSource(
    workspaceId: string,
    document: SourceDocument,
    options: { precondition?: () => Promise<boolean> } = {},
  ): Promise<boolean> {
    return this.groupCommit.replaceSource(workspaceId, document, options.precondition);
  }

  async replaceSources(
    workspaceId: string,
    documents: readonly SourceDocument[],
    options: { maintain?: boolean; precondition?: () => Promise<boolean> } = {},
  ): Promise<boolean> {
    return writeSources(this.settings, this.workspaces, workspaceId, documents, options);
  }

  /** Brings every row written into an index: seals the recent tables, does every merge due. */
  async optimize(workspaceId: string): Promise<void> {
    await optimizeWorkspace(this.settings, this.workspaces, workspaceId);
  }

  /** Deletes every row of a source. */
  async removeSource(workspaceId: string, sourceId: string): Promise<void> {
    await this.replaceSources(workspaceId, [
      { source: { id: sourceId, type: "", crawlId: null }, chunks: [] },
    ]);
  }

  /**
   * Erases the workspace's index: every table and file of it (see `dropWorkspace`). Searching or
   * writing it afterwards starts an empty index.
   */
  async dropWorkspace(workspaceId: string): Promise<void> {
    await dropWorkspace(this.settings, this.workspaces, workspaceId);
  }

  /** Whether anything of the workspace's index is stored. */
  holdsWorkspace(workspaceId: string): Promise<boolean> {
    return holdsWorkspace(this.settings, workspaceId);
  }

  /**
   * The chunks that best answer a query, best first: lexical without a vector, hybrid with one
   * (see `searchWorkspace`).
   */
  async search(workspaceId: string, query: SearchQuery): Promise<SearchHit[]> {
    return searchWorkspace(this.settings, this.workspaces, workspaceId, query);
  }
}
