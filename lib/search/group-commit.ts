import type { WriterLock } from "../store/writer-lock.js";
import type { SourceDocument } from "./rows.js";
import { checkWorkspace } from "./workspaces.js";

/** A single-source write waiting for its workspace's writer lock (see `GroupCommit`). */
interface Waiting {
  document: SourceDocument;
  precondition: (() => Promise<boolean>) | undefined;
  resolve(written: boolean): void;
  reject(error: unknown): void;
}

/**
 * Group commit: the single-source writes that wait for a workspace's writer lock in this
 * process go in together once it is theirs, in one commit per table and one maintenance, so
 * five records of a batch cost one optimize, not five. Each keeps its own precondition.
 */
export class GroupCommit {
  private readonly waiting = new Map<string, Waiting[]>();

  constructor(
    private readonly lock: WriterLock,
    /** Writes documents' rows, with maintenance, the caller holding the writer lock. */
    private readonly write: (workspaceId: string, documents: SourceDocument[]) => Promise<void>,
  ) {}

  /** Queues one source's write for the next commit of its workspace; answers whether it was written. */
  replaceSource(
    workspaceId: string,
    document: SourceDocument,
    precondition: (() => Promise<boolean>) | undefined,
  ): Promise<boolean> {
    return new Promise((resolve, reject) => {
      checkWorkspace(workspaceId);
      const entry: Waiting = { document, precondition, resolve, reject };
      const waiting = this.waiting.get(workspaceId);
      if (waiting) {
        waiting.push(entry);
        return;
      }
      this.waiting.set(workspaceId, [entry]);
      void this.commitWaiting(workspaceId);
    });
  }

  private async commitWaiting(workspaceId: string): Promise<void> {
    let batch: Waiting[] = [];
    try {
      await this.lock.withLock(workspaceId, async () => {
        batch = this.waiting.get(workspaceId) ?? [];
        this.waiting.delete(workspaceId);
        const accepted = await Promise.all(
          batch.map((entry) => (entry.precondition ? entry.precondition() : true)),
        );
        // A later write of one source supersedes an earlier one in the same batch.
        const latest = new Map<string, SourceDocument>();
        batch.forEach((entry, i) => {
          if (accepted[i]) latest.set(entry.document.source.id, entry.document);
        });
        await this.write(workspaceId, [...latest.values()]);
        batch.forEach((entry, i) => {
          entry.resolve(accepted[i] === true);
        });
      });
    } catch (err) {
      if (batch.length === 0) {
        batch = this.waiting.get(workspaceId) ?? [];
        this.waiting.delete(workspaceId);
      }
      for (const entry of batch) entry.reject(err);
    }
  }
}
