import { ApiError } from "../errors.js";
import { type Table, wsKey } from "../store/table.js";

/** The costly kinds of work each workspace may do a limited amount of per day (UTC). */
export type QuotaKind = "crawl_pages" | "upload_bytes" | "model_calls" | "competitor_checks";

export type QuotaLimits = Record<QuotaKind, number>;

const DESCRIPTIONS: Record<QuotaKind, string> = {
  crawl_pages: "crawl pages",
  upload_bytes: "uploaded bytes",
  model_calls: "model calls",
  competitor_checks: "competitor checks",
};

/**
 * Daily quotas: one counter per workspace, kind and UTC day, consumed with a conditional write
 * that refuses to pass the limit, so concurrent requests can never overspend it together.
 */
export class Quotas {
  constructor(
    private readonly table: Table,
    private readonly limits: QuotaLimits,
  ) {}

  /** Takes `amount` of a quota, or throws a 429 naming the quota, its limit and when it resets. */
  async consume(workspaceId: string, kind: QuotaKind, amount = 1): Promise<void> {
    const limit = this.limits[kind];
    const now = new Date();
    const day = now.toISOString().slice(0, 10);
    const resets = Date.parse(`${day}T00:00:00Z`) + 86_400_000;
    const used = await this.table.increment(
      wsKey(workspaceId),
      `QUOTA#${day}#${kind}`,
      "used",
      amount,
      {
        max: limit,
        expiresAt: Math.floor(resets / 1000) + 86_400,
      },
    );
    if (used !== undefined) return;
    throw new ApiError(
      429,
      "quota_exceeded",
      `Daily quota of ${DESCRIPTIONS[kind]} reached: ${limit} per day, and this needs ${amount}`,
      { quota: kind, limit, requested: amount, resetsAt: new Date(resets).toISOString() },
      { "Retry-After": String(Math.ceil((resets - now.getTime()) / 1000)) },
    );
  }
}
