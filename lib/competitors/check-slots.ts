import { WorkspaceSlots } from "../limits/workspace-slots.js";
import type { Table } from "../store/table.js";

export type { SlotLease } from "../limits/workspace-slots.js";

export const CHECK_SLOT_PREFIX = "CHECKSLOT#";

/**
 * A workspace's share of the check worker: at most `perWorkspace` queued checks of one workspace
 * run at once, so a workspace whose sites hang cannot hold every invocation while others wait
 * (docs/operations.md#capacity). The slots are the shared workers' (`WorkspaceSlots`), under
 * their own prefix.
 */
export class CheckSlots extends WorkspaceSlots {
  constructor(table: Table, perWorkspace: number) {
    super(table, CHECK_SLOT_PREFIX, perWorkspace);
  }
}
