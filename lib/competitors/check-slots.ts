import { randomUUID } from "node:crypto";
import { equals, lessThan } from "../store/conditions.js";
import { TTL_ATTRIBUTE } from "../store/schema.js";
import type { Item, Table } from "../store/table.js";
import { wsKey } from "../store/table.js";

/** One of a workspace's check slots while a queued check holds it. */
interface SlotItem extends Item {
  /** Epoch ms when the lease ends even if its check never gives it back (a crash, a timeout). */
  until: number;
  holder: string;
}

/** A slot a check holds; give it back with `release`. */
export interface SlotLease {
  workspaceId: string;
  slot: number;
  holder: string;
}

export const CHECK_SLOT_PREFIX = "CHECKSLOT#";

/**
 * A workspace's share of the check worker: at most `perWorkspace` queued checks of one workspace
 * run at once, so a workspace whose sites hang cannot hold every invocation while others wait
 * (docs/operations.md#capacity). Each slot is one item leased by a conditional write until a
 * time; a check that dies without giving it back frees it when the lease ends, and DynamoDB's
 * time to live removes it later.
 */
export class CheckSlots {
  constructor(
    private readonly table: Table,
    private readonly perWorkspace: number,
  ) {}

  /** Takes a free slot of the workspace until `until` (epoch ms); undefined when all are held. */
  async acquire(workspaceId: string, now: number, until: number): Promise<SlotLease | undefined> {
    const holder = randomUUID();
    // Starting at a random slot spreads the workspace's concurrent checks over its items.
    const first = Math.floor(Math.random() * this.perWorkspace);
    for (let i = 0; i < this.perWorkspace; i++) {
      const slot = (first + i) % this.perWorkspace;
      const taken = await this.table.change<SlotItem>(wsKey(workspaceId), slotKey(slot), {
        set: { until, holder, [TTL_ATTRIBUTE]: Math.ceil(until / 1000) + 3600 },
        condition: lessThan("until", now),
        upsert: true,
      });
      if (taken) return { workspaceId, slot, holder };
    }
    return undefined;
  }

  /** Gives a slot back, unless its lease ran out and another check holds it now. */
  async release(lease: SlotLease): Promise<void> {
    await this.table.delete(
      wsKey(lease.workspaceId),
      slotKey(lease.slot),
      equals("holder", lease.holder),
    );
  }
}

const slotKey = (slot: number) => `${CHECK_SLOT_PREFIX}${slot}`;
