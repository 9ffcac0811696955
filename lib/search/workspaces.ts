import type { Connection, Table as LanceTable, Session } from "@lancedb/lancedb";
import { LRUCache } from "lru-cache";
import { engine, openTable, storageOptions } from "./engine.js";
import type { SearchSettings } from "./options.js";
import { Prewarmer } from "./prewarm.js";
import type { Registry } from "./rows.js";

const WORKSPACE_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function checkWorkspace(workspaceId: string): void {
  if (!WORKSPACE_ID.test(workspaceId)) {
    throw new Error(`Invalid workspace id: ${JSON.stringify(workspaceId)}`);
  }
}

/** A workspace's database and the tables opened in it so far. */
export class OpenWorkspace {
  readonly tables = new Map<string, Promise<LanceTable | undefined>>();
  /** Its chunk tables' full-text indexes held in the engine's cache (see `Prewarmer.warm`). */
  readonly prewarmer = new Prewarmer();
  /** When this process last optimized each recent table (see `Tiers.reindex`). */
  readonly optimizedAt = new Map<string, number>();
  /** The registry of its tables as last read, and whether with each segment's sources. */
  registry: { registry: Registry; withSources: boolean } | undefined;
  /** The highest generation a search brought, and the refresh of the open tables it started. */
  private generation: number | undefined;
  private caughtUp: Promise<unknown> = Promise.resolve();
  constructor(
    readonly db: Connection,
    /** Told when a table is opened, so the workspaces kept open account for it. */
    private readonly grew: () => void = () => {},
  ) {}

  /**
   * Settles once the open tables hold every change counted up to `generation`: a higher one than
   * seen so far moves them to their latest versions, and searches in flight with it wait for that.
   */
  catchUp(generation: number | undefined): Promise<unknown> {
    if (
      generation !== undefined &&
      (this.generation === undefined || generation > this.generation)
    ) {
      const opened = [...this.tables.values()];
      this.generation = generation;
      // A table whose open failed is opened again by the search that wants it.
      this.caughtUp = Promise.all(
        opened.map(async (table) => (await table.catch(() => undefined))?.checkoutLatest()),
      ).catch((err: unknown) => {
        // Unsettled: the next search tries again.
        this.generation = undefined;
        throw err;
      });
    }
    return this.caughtUp;
  }

  /** A table of the workspace; a missing one is looked for again next time, as a write may create it. */
  table(name: string): Promise<LanceTable | undefined> {
    let table = this.tables.get(name);
    if (!table) {
      table = openTable(this.db, name);
      this.tables.set(name, table);
      this.grew();
      table.then(
        (opened) => opened ?? this.tables.delete(name),
        () => this.tables.delete(name),
      );
    }
    return table;
  }
}

type WorkspaceSettings = Pick<
  SearchSettings,
  "location" | "openWorkspacesBytes" | "indexCacheBytes" | "readConsistencySeconds"
>;

/**
 * What an open workspace is taken to hold outside the engine's caches: its connection, and per
 * open table the handle with the table's manifest (its fragments and schema). An estimate on the
 * safe side of what a handle held here (tens of kilobytes for a table of a few fragments).
 */
const CONNECTION_BYTES = 64 * 1024;
const TABLE_BYTES = 256 * 1024;

/** The engine's caches, one for the process (see `Workspaces.connect`). */
let processSession: Session | undefined;

/**
 * The workspaces a process has open (a connection and table handles, no rows), kept for the next
 * search, the least recently used dropped once their estimated memory passes
 * `openWorkspacesBytes`: a process keeps many small workspaces open or fewer large ones (a large
 * one has more segments). The engine's caches of index pages and metadata are one session shared
 * by all of them and by every other index of the process, bounded by `indexCacheBytes`.
 */
export class Workspaces {
  private readonly open: LRUCache<string, Promise<OpenWorkspace>>;
  private readonly footprints = new Map<string, () => number>();

  constructor(private readonly settings: WorkspaceSettings) {
    this.open = new LRUCache({
      maxSize: settings.openWorkspacesBytes,
      sizeCalculation: (_, workspaceId) => this.footprints.get(workspaceId)?.() ?? CONNECTION_BYTES,
      dispose: (_, workspaceId, reason) => {
        if (reason !== "set") this.footprints.delete(workspaceId);
      },
    });
  }

  /** The workspace's database, opened once and kept among the most recently used. */
  async get(workspaceId: string): Promise<OpenWorkspace> {
    let open = this.open.get(workspaceId);
    if (!open) {
      open = this.connect(workspaceId);
      open.catch(() => this.open.delete(workspaceId));
      this.open.set(workspaceId, open);
    }
    return open;
  }

  /** Counts a workspace's newly opened table against the memory its open workspaces may hold. */
  private resize(workspaceId: string, open: Promise<OpenWorkspace>): void {
    if (this.open.peek(workspaceId) === open) this.open.set(workspaceId, open);
  }

  /** Lets go of a workspace this process has open: its next use connects afresh. */
  forget(workspaceId: string): void {
    this.open.delete(workspaceId);
  }

  private async connect(workspaceId: string): Promise<OpenWorkspace> {
    const { lance } = await engine();
    // One session for every workspace and every index of the process: the engine's index and
    // metadata caches have one bound (its defaults are 6 GB and 1 GB), however many workspaces
    // it opens, and however many functions share the process (the local runtime runs them all
    // in one, each with its own SearchIndex). The first index's bound is the process's.
    processSession ??= new lance.Session(
      BigInt(this.settings.indexCacheBytes),
      BigInt(Math.ceil(this.settings.indexCacheBytes / 4)),
    );
    const base = this.settings.location.uri.replace(/\/+$/, "");
    const options = storageOptions(this.settings.location.s3);
    const db = await lance.connect(`${base}/${workspaceId}`, {
      readConsistencyInterval: this.settings.readConsistencySeconds,
      session: processSession,
      ...(options ? { storageOptions: options } : {}),
    });
    const workspace: OpenWorkspace = new OpenWorkspace(db, () => {
      const open = this.open.peek(workspaceId);
      if (open) this.resize(workspaceId, open);
    });
    this.footprints.set(workspaceId, () => CONNECTION_BYTES + workspace.tables.size * TABLE_BYTES);
    return workspace;
  }
}
