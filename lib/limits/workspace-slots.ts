import { randomUUID } from "node:crypto";
import { equals, lessThan } from "../store/conditions.js";
import { TTL_ATTRIBUTE } from "../store/schema.js";
import type { Item, Table } from "../store/table.js";
import { wsKey } from "../store/table.js";

/** One of a workspace's slots of a worker while a message of it holds the slot. */
interface SlotItem extends Item {
  /** Epoch ms when the lease ends even if its holder never gives it back (a crash, a timeout). */
  until: number;
  holder: string;
}

/** A slot a message holds; give it back with `release`. */
export interface SlotLease {
  workspaceId: string;
  slot: number;
  holder: string;
}

/**
 * A workspace's share of one shared worker: at most `perWorkspace` messages of one workspace run
 * at once, so one workspace (a bulk import, sites that hang) cannot hold every invocation while
 * others wait (docs/operations.md#capacity). Each slot is one item in the workspace's own
 * partition (`{prefix}{n}`), leased by a single-item conditional write until a time; a holder that
 * dies without giving it back frees it when the lease ends, and DynamoDB's time to live removes
 * it later. No counter is shared between workspaces, so the slots are no hot key.
 */
export class WorkspaceSlots {
  constructor(
    private readonly table: Table,
    /** Sort-key prefix of the worker's slot items, e.g. `CHECKSLOT#`. */
    private readonly prefix: string,
    readonly perWorkspace: number,
  ) {}

  /**
   * Takes a free slot of the workspace until `until` (epoch ms); undefined when all are held. One
   * query of the workspace's slot items first: a workspace at its share (a backlog being put
   * back) costs a read, not a failed write per slot. The read may be stale; the conditional
   * write alone decides.
   */
  async acquire(workspaceId: string, now: number, until: number): Promise<SlotLease | undefined> {
    const held = await this.table.page<SlotItem>({
      pk: wsKey(workspaceId),
      skPrefix: this.prefix,
      limit: this.perWorkspace,
    });
    const busy = new Set(held.items.filter((s) => s.until >= now).map((s) => s.sk));
    if (busy.size >= this.perWorkspace) return undefined;
    const holder = randomUUID();
    // Starting at a random slot spreads the workspace's concurrent holders over its items.
    const first = Math.floor(Math.random() * this.perWorkspace);
    for (let i = 0; i < this.perWorkspace; i++) {
      const slot = (first + i) % this.perWorkspace;
      if (busy.has(this.key(slot))) continue;
      const taken = await this.table.change<SlotItem>(wsKey(workspaceId), this.key(slot), {
        set: { until, holder, [TTL_ATTRIBUTE]: Math.ceil(until / 1000) + 3600 },
        condition: lessThan("until", now),
        upsert: true,
      });
      if (taken) return { workspaceId, slot, holder };
    }
    return undefined;
  }

  /** Extends a held slot's lease to `until`; false when it ran out and another holder has it. */
  async renew(lease: SlotLease, until: number): Promise<boolean> {
    const renewed = await this.table.change<SlotItem>(
      wsKey(lease.workspaceId),
      this.key(lease.slot),
      {
        set: { until, [TTL_ATTRIBUTE]: Math.ceil(until / 1000) + 3600 },
        condition: equals("holder", lease.holder),
      },
    );
    return Boolean(renewed);
  }

  /** Gives a slot back, unless its lease ran out and another holder has it now. */
  async release(lease: SlotLease): Promise<void> {
    await this.table.delete(
      wsKey(lease.workspaceId),
      this.key(lease.slot),
      equals("holder", lease.holder),
    );
  }

  private key(slot: number) {
    return `${this.prefix}${slot}`;
  }
}
