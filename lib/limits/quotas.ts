import { DomainError } from "../errors.js";
import { logger } from "../log.js";
import { count } from "../metrics.js";
import { and, type Condition, equals, missing } from "../store/conditions.js";
import { type Item, type Table, wsKey } from "../store/table.js";

/** The costly kinds of work each workspace may do a limited amount of per day (UTC). */
export const QUOTA_KINDS = [
  "crawl_pages",
  "upload_bytes",
  "model_calls",
  "competitor_checks",
  "exports",
  "reindexes",
] as const;
export type QuotaKind = (typeof QUOTA_KINDS)[number];

export type QuotaLimits = Record<QuotaKind, number>;

const DESCRIPTIONS: Record<QuotaKind, string> = {
  crawl_pages: "crawl pages",
  upload_bytes: "uploaded bytes",
  model_calls: "model calls",
  competitor_checks: "competitor checks",
  exports: "workspace exports",
  reindexes: "reindexes",
};

/**
 * What one consumption took from a quota. Work paid for up front (a crawl's pages, an upload's
 * bytes) keeps it on its record as `quota`, so what goes unused can be given back (`refundUnused`).
 */
export interface QuotaCharge {
  kind: QuotaKind;
  /** The UTC day whose counter it was taken from. */
  day: string;
  amount: number;
  /** How much was given back; set once. */
  refunded?: number;
}

/** A record that carries what its work was charged. */
export type ChargedItem = Item & { workspaceId: string; quota?: QuotaCharge | undefined };

/** One quota today: what was taken, the limit, what is left, and when the counter starts again. */
export interface QuotaUsage {
  used: number;
  limit: number;
  remaining: number;
  resetsAt: string;
}

/** A workspace's usage of every quota on one UTC day. */
export interface Usage {
  day: string;
  quotas: Record<QuotaKind, QuotaUsage>;
}

const counterPrefix = (day: string) => `QUOTA#${day}#`;
const counterKey = (day: string, kind: QuotaKind) => `${counterPrefix(day)}${kind}`;
const COUNTER_FIELD = "used";

/** The UTC day `now` falls in, and the epoch milliseconds its quotas reset at (the next midnight). */
function quotaDay(now: Date) {
  const day = now.toISOString().slice(0, 10);
  return { day, resets: Date.parse(`${day}T00:00:00Z`) + 86_400_000 };
}

/**
 * Daily quotas: one counter per workspace, kind and UTC day, consumed with a conditional write
 * that refuses to pass the limit, so concurrent requests can never overspend it together.
 */
export class Quotas {
  constructor(
    private readonly table: Table,
    private readonly limits: QuotaLimits,
  ) {}

  /** Takes `amount` of a quota, or throws `quota_exceeded` naming the quota, its limit and when it resets. */
  async consume(workspaceId: string, kind: QuotaKind, amount = 1): Promise<QuotaCharge> {
    const limit = this.limits[kind];
    const now = new Date();
    const { day, resets } = quotaDay(now);
    const used = await this.table.increment(
      wsKey(workspaceId),
      counterKey(day, kind),
      COUNTER_FIELD,
      amount,
      {
        max: limit,
        expiresAt: Math.floor(resets / 1000) + 86_400,
      },
    );
    if (used !== undefined) return { kind, day, amount };
    count("QuotaRefusals", 1, { quota: kind });
    throw new DomainError(
      "quota_exceeded",
      `Daily quota of ${DESCRIPTIONS[kind]} reached: ${limit} per day, and this needs ${amount}`,
      {
        details: {
          quota: kind,
          limit,
          requested: amount,
          resetsAt: new Date(resets).toISOString(),
        },
        retryAfterSeconds: Math.ceil((resets - now.getTime()) / 1000),
      },
    );
  }

  /**
   * Gives a whole charge back to its day's counter (never below zero): for work refused after it
   * was charged and before anything was written (a create refused at a workspace cap), so a
   * refused request spends nothing. Charges kept on a record go back through `refundUnused`.
   */
  async refund(workspaceId: string, charge: QuotaCharge): Promise<void> {
    const counter = counterKey(charge.day, charge.kind);
    await this.table.decrement(wsKey(workspaceId), counter, COUNTER_FIELD, charge.amount);
  }

  /**
   * Runs `work` with a `reserve` that takes from a quota (before anything is written), and gives
   * what it took back when the work is then refused at a workspace cap (`limit_reached`).
   */
  async reserving<T>(
    workspaceId: string,
    kind: QuotaKind,
    work: (reserve: (amount: number) => Promise<QuotaCharge>) => Promise<T>,
  ): Promise<T> {
    const charges: QuotaCharge[] = [];
    try {
      return await work(async (amount) => {
        const charge = await this.consume(workspaceId, kind, amount);
        charges.push(charge);
        return charge;
      });
    } catch (err) {
      if (err instanceof DomainError && err.code === "limit_reached") {
        for (const charge of charges) await this.refund(workspaceId, charge);
      }
      throw err;
    }
  }

  /** How much of each quota the workspace has used today (UTC): one query of the day's counters. */
  async usage(workspaceId: string): Promise<Usage> {
    const { day, resets } = quotaDay(new Date());
    const prefix = counterPrefix(day);
    const counters = await this.table.all<Item & { used?: number }>(wsKey(workspaceId), prefix, [
      "sk",
      COUNTER_FIELD,
    ]);
    const usedOf = new Map(counters.map((c) => [c.sk.slice(prefix.length), Number(c.used ?? 0)]));
    const resetsAt = new Date(resets).toISOString();
    const quotas = Object.fromEntries(
      QUOTA_KINDS.map((kind) => {
        const limit = this.limits[kind];
        const used = usedOf.get(kind) ?? 0;
        return [kind, { used, limit, remaining: Math.max(0, limit - used), resetsAt }];
      }),
    ) as Record<QuotaKind, QuotaUsage>;
    return { day, quotas };
  }
}

/**
 * What scheduled work (the nightly competitor sweep) asks before it queues one piece of work for a
 * workspace: takes `amount` of the quota and answers true, or, the quota spent, logs the skip and
 * answers false, and answers false for that workspace from then on without asking again.
 */
export function scheduledCharge(
  quotas: Quotas,
  kind: QuotaKind,
  what: string,
  amount = 1,
): (workspaceId: string) => Promise<boolean> {
  const spent = new Set<string>();
  return async (workspaceId) => {
    if (spent.has(workspaceId)) return false;
    try {
      await quotas.consume(workspaceId, kind, amount);
      return true;
    } catch (err) {
      if (!(err instanceof DomainError && err.code === "quota_exceeded")) throw err;
      if (!spent.has(workspaceId)) logger.warn(`${what} over quota`, { workspaceId, quota: kind });
      spent.add(workspaceId);
      return false;
    }
  };
}

/**
 * The condition that a record still carries `charge`, not refunded yet: what marking it refunded
 * is conditioned on, so a charge is returned once.
 */
export const stillCharged = (charge: QuotaCharge): Condition =>
  and(
    equals("quota.day", charge.day),
    equals("quota.kind", charge.kind),
    missing("quota.refunded"),
  );

/**
 * Marks a record's charge refunded (`refunded`: its new `quota`) under `condition`: done by the
 * record's own writer, the only code that writes the record. False when the condition failed.
 */
export type MarkRefunded = (refunded: QuotaCharge, condition: Condition) => Promise<boolean>;

/**
 * Gives `unused` (at most the whole charge) back to the day's counter the record's charge came
 * from, once per charge: the record is first marked refunded (by `mark`) under the condition that
 * it was not, then the counter goes down by a conditional decrement that never takes it below
 * zero. A crash between the two writes loses the refund rather than paying it twice. Answers what
 * was returned.
 */
export async function refundUnused(
  table: Table,
  record: ChargedItem,
  unused: number,
  mark: MarkRefunded,
): Promise<number> {
  const charge = record.quota;
  const amount = charge ? Math.min(unused, charge.amount) : 0;
  if (!charge || amount <= 0) return 0;
  if (!(await mark({ ...charge, refunded: amount }, stillCharged(charge)))) return 0;
  const counter = counterKey(charge.day, charge.kind);
  return (await table.decrement(wsKey(record.workspaceId), counter, COUNTER_FIELD, amount))
    ? amount
    : 0;
}
