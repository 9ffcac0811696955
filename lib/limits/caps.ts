import { DomainError } from "../errors.js";
import { count as metric } from "../metrics.js";
import { and, type Condition, equals, lessThan, missing, not, or } from "../store/conditions.js";
import { type Item, type Table, wsKey } from "../store/table.js";

/**
 * How many records of each kind a workspace may hold at once (docs/decisions/0007-workspace-caps.md):
 * unlike the daily quotas these do not reset; deleting a record frees its slot.
 */
export const CAP_KINDS = ["sources", "competitors", "artifacts", "webhooks"] as const;
export type CapKind = (typeof CAP_KINDS)[number];
export type CapLimits = Record<CapKind, number>;

/** The defaults of `MAX_*_PER_WORKSPACE`; webhooks stay at 20 (every event reads all of them). */
export const DEFAULT_CAPS: CapLimits = {
  sources: 10_000,
  competitors: 100,
  artifacts: 10_000,
  webhooks: 20,
};

const NAMES: Record<CapKind, string> = {
  sources: "knowledge sources",
  competitors: "competitors",
  artifacts: "saved artifacts",
  webhooks: "webhook endpoints",
};

/**
 * Where each kind's records and counter live in the workspace's partition: the sort-key prefix of
 * its records (counted by a recount; `SOURCE_PREFIX`, `COMPETITOR_PREFIX`, `ARTIFACT_PREFIX`, the
 * endpoints' `WEBHOOK#`: test/limits/caps.test.ts holds them equal) and its counter's key (webhooks
 * keep the `WEBHOOKCOUNT` they were counted under before the other caps).
 */
export const CAPPED: Record<CapKind, { prefix: string; counter: string }> = {
  sources: { prefix: "KB#", counter: "CAP#sources" },
  competitors: { prefix: "COMP#", counter: "CAP#competitors" },
  artifacts: { prefix: "ART#", counter: "CAP#artifacts" },
  webhooks: { prefix: "WEBHOOK#", counter: "WEBHOOKCOUNT" },
};

const FIELD = "count";

/** A counter changed this recently may have a create or delete between its two writes. */
const QUIET_MS = 60_000;
/** A recount at the cap runs at most this often per workspace and kind. */
const RECOUNT_EVERY_MS = 3_600_000;

interface Counter extends Item {
  count?: number;
  /** When a take or release last moved it (epoch ms). */
  changedAt?: number;
  /** When a recount last ran (epoch ms). */
  recountedAt?: number;
}

/** One cap as `GET /api/usage` shows it. */
export interface CapUsage {
  used: number;
  limit: number;
  remaining: number;
}

/**
 * Per-workspace caps on how many records a workspace holds: one counter item per workspace and
 * kind, taken by a conditional increment (`count < limit`) before a record is written and given
 * back by a conditional decrement (never below zero) after one is deleted, so concurrent creates
 * never pass the cap together; no transaction is needed. Every failure between the two writes
 * leaves the counter high, never low: a slot is lost, the cap is never passed. A recount by query
 * repairs that: when a workspace has no counter yet (records made before caps existed), and when a
 * create is refused at the cap (at most hourly, and only on a counter no create or delete moved in
 * the last minute, its value unchanged while the records were counted).
 */
export class Caps {
  constructor(
    private readonly table: Table,
    private readonly limits: CapLimits = DEFAULT_CAPS,
  ) {}

  limit(kind: CapKind): number {
    return this.limits[kind];
  }

  /** Takes a slot for one new record, or throws `limit_reached` naming the cap. */
  async take(workspaceId: string, kind: CapKind): Promise<void> {
    const limit = this.limits[kind];
    for (let attempt = 0; attempt < 3; attempt++) {
      const taken = await this.table.change(wsKey(workspaceId), CAPPED[kind].counter, {
        add: { [FIELD]: 1 },
        set: { changedAt: Date.now() },
        condition: lessThan(FIELD, limit),
      });
      if (taken) return;
      const counter = await this.counter(workspaceId, kind);
      if (!counter) {
        await this.initialize(workspaceId, kind);
        continue;
      }
      // Made by a concurrent first take since ours failed: there is room, take it.
      if (Number(counter.count ?? 0) < limit) continue;
      if (!(await this.repair(workspaceId, kind, counter))) break;
    }
    throw this.refusal(kind);
  }

  private refusal(kind: CapKind): DomainError {
    const limit = this.limits[kind];
    metric("CapRefusals", 1, { cap: kind });
    return new DomainError(
      "limit_reached",
      `A workspace holds at most ${limit} ${NAMES[kind]}; delete one first`,
      { details: { cap: kind, limit } },
    );
  }

  /**
   * Throws `limit_reached` when the workspace holds its cap already, taking nothing: for work that
   * spends before it creates (a generation saved as an artifact), so it does not spend in vain.
   * `take` still decides.
   */
  async ensureRoom(workspaceId: string, kind: CapKind): Promise<void> {
    const counter = await this.counter(workspaceId, kind);
    const held = counter ? Number(counter.count ?? 0) : await this.initialize(workspaceId, kind);
    if (held >= this.limits[kind]) throw this.refusal(kind);
  }

  /** Gives back the slot of a record deleted (or never written after `take`). */
  async release(workspaceId: string, kind: CapKind): Promise<void> {
    await this.table.change(wsKey(workspaceId), CAPPED[kind].counter, {
      add: { [FIELD]: -1 },
      set: { changedAt: Date.now() },
      condition: not(lessThan(FIELD, 1)),
    });
  }

  /** Each cap of the workspace: what it holds, the limit and what is left. */
  async usage(workspaceId: string): Promise<Record<CapKind, CapUsage>> {
    const counters = await this.table.getMany<Counter>(
      wsKey(workspaceId),
      CAP_KINDS.map((kind) => CAPPED[kind].counter),
    );
    const entries = await Promise.all(
      CAP_KINDS.map(async (kind) => {
        const counter = counters.find((c) => c.sk === CAPPED[kind].counter);
        // A read writes nothing: a workspace without a counter yet is counted, not initialized.
        const used = counter ? Number(counter.count ?? 0) : await this.recount(workspaceId, kind);
        const limit = this.limits[kind];
        return [kind, { used, limit, remaining: Math.max(0, limit - used) }] as const;
      }),
    );
    return Object.fromEntries(entries) as Record<CapKind, CapUsage>;
  }

  /** The records of a kind the workspace holds, counted by query (keys only). */
  async recount(workspaceId: string, kind: CapKind): Promise<number> {
    const items = await this.table.all(wsKey(workspaceId), CAPPED[kind].prefix, ["sk"]);
    return items.length;
  }

  private counter(workspaceId: string, kind: CapKind): Promise<Counter | undefined> {
    return this.table.get<Counter>(wsKey(workspaceId), CAPPED[kind].counter);
  }

  /** A first counter, from a recount; a concurrent first one wins. Answers the count. */
  private async initialize(workspaceId: string, kind: CapKind): Promise<number> {
    const held = await this.recount(workspaceId, kind);
    await this.table.create({ pk: wsKey(workspaceId), sk: CAPPED[kind].counter, [FIELD]: held });
    return Number((await this.counter(workspaceId, kind))?.count ?? held);
  }

  /**
   * Sets a counter at the cap to a recount, when that may be safely done (see the class); answers
   * whether it lowered the counter.
   */
  private async repair(workspaceId: string, kind: CapKind, counter: Counter): Promise<boolean> {
    const now = Date.now();
    if ((counter.changedAt ?? 0) > now - QUIET_MS) return false;
    if ((counter.recountedAt ?? 0) > now - RECOUNT_EVERY_MS) return false;
    const unchanged: Condition = and(
      equals(FIELD, counter.count ?? 0),
      counter.changedAt === undefined
        ? missing("changedAt")
        : equals("changedAt", counter.changedAt),
    );
    const claimed = await this.table.change(counter.pk, counter.sk, {
      set: { recountedAt: now },
      condition: and(
        unchanged,
        or(missing("recountedAt"), lessThan("recountedAt", now - RECOUNT_EVERY_MS + 1)),
      ),
    });
    if (!claimed) return false;
    const held = await this.recount(workspaceId, kind);
    if (held >= (counter.count ?? 0)) return false;
    const repaired = await this.table.change(counter.pk, counter.sk, {
      set: { [FIELD]: held },
      condition: unchanged,
    });
    return repaired !== undefined;
  }
}
