import { type Item, type Page, type Table, wsKey } from "../store/table.js";
import { planKey } from "./extract/pricing.js";
import { historyPrefix, type Snapshot } from "./snapshot.js";
import { type CompetitorSnapshot, projectionOf } from "./state.js";

/** Days a snapshot stays in a competitor's history by default (`SNAPSHOT_RETENTION_DAYS`). */
export const DEFAULT_RETENTION_DAYS = 365;
/**
 * Plans a history entry keeps: one table item holds an entry (400 KB at most), and a page that
 * lists thousands of plans must not make it too big to write.
 */
const MAX_PLANS = 200;
const DAY_MS = 86_400_000;

interface HistoryItem extends Item {
  competitorId: string;
  takenAt: string;
  snapshot: CompetitorSnapshot;
  /** Epoch seconds: the table's time to live removes the entry after the retention. */
  expiresAt: number;
}

/** One point of a plan's price series: the plan as a snapshot showed it. */
export interface PricePoint {
  at: string;
  amount: number | null;
  currency: string | null;
  period: string | null;
  perSeat: boolean;
  contactSales: boolean;
}

/** A plan's prices over time: a point where it first showed and one per change since. */
export interface PriceSeries {
  plan: string;
  points: PricePoint[];
  /** The last snapshot that listed the plan. */
  lastSeenAt: string;
  /** Listed in the latest snapshot. */
  current: boolean;
}

const samePrice = (a: PricePoint, b: PricePoint) =>
  a.amount === b.amount &&
  a.currency === b.currency &&
  a.period === b.period &&
  a.perSeat === b.perSeat &&
  a.contactSales === b.contactSales;

/**
 * What each competitor's site looked like over time: one entry per snapshot (a check that saw
 * something new), kept in the table for the retention and removed by its time to live. The
 * bucket keeps only the latest snapshot, which the next check compares with.
 */
export class SnapshotHistory {
  constructor(
    private readonly table: Table,
    private readonly retentionDays = DEFAULT_RETENTION_DAYS,
    /** What "now" is for the retention: tests move it by hand. */
    private readonly clock: () => number = Date.now,
  ) {}

  /** The oldest instant still within the retention: older entries may linger until TTL runs. */
  private cutoff(now: number): string {
    return new Date(now - this.retentionDays * DAY_MS).toISOString();
  }

  async add(workspaceId: string, competitorId: string, snapshot: Snapshot): Promise<void> {
    const projection = projectionOf(snapshot);
    const item: HistoryItem = {
      pk: wsKey(workspaceId),
      sk: `${historyPrefix(competitorId)}${snapshot.takenAt}`,
      competitorId,
      takenAt: snapshot.takenAt,
      snapshot: { ...projection, plans: projection.plans.slice(0, MAX_PLANS) },
      expiresAt: Math.ceil((Date.parse(snapshot.takenAt) + this.retentionDays * DAY_MS) / 1000),
    };
    await this.table.put(item);
  }

  /** One page of a competitor's snapshots, newest first, within the retention. */
  async list(
    workspaceId: string,
    competitorId: string,
    q: {
      limit: number;
      cursor?: string | undefined;
      since?: string | undefined;
      until?: string | undefined;
    },
    now = this.clock(),
  ): Promise<Page<CompetitorSnapshot>> {
    const since = [q.since, this.cutoff(now)].filter(Boolean).sort().at(-1);
    const page = await this.table.page<HistoryItem>({
      pk: wsKey(workspaceId),
      skPrefix: historyPrefix(competitorId),
      limit: q.limit,
      cursor: q.cursor,
      newestFirst: true,
      range: { field: "takenAt", from: since, to: q.until },
    });
    return { items: page.items.map((item) => item.snapshot), nextCursor: page.nextCursor };
  }

  /** Each plan's price series over the retention, plans in the order the latest snapshot lists. */
  async prices(
    workspaceId: string,
    competitorId: string,
    now = this.clock(),
  ): Promise<PriceSeries[]> {
    const cutoff = this.cutoff(now);
    const items = (
      await this.table.all<HistoryItem>(wsKey(workspaceId), historyPrefix(competitorId), [
        "takenAt",
        "snapshot",
      ])
    )
      .filter((item) => item.takenAt >= cutoff)
      .sort((a, b) => a.takenAt.localeCompare(b.takenAt));
    const series = new Map<string, PriceSeries>();
    for (const { takenAt, snapshot } of items) {
      for (const plan of snapshot.plans) {
        const point: PricePoint = {
          at: takenAt,
          amount: plan.price,
          currency: plan.currency,
          period: plan.period,
          perSeat: plan.perSeat,
          contactSales: plan.contactSales,
        };
        const key = planKey(plan.name);
        const known = series.get(key);
        if (!known) {
          series.set(key, {
            plan: plan.name,
            points: [point],
            lastSeenAt: takenAt,
            current: false,
          });
          continue;
        }
        const last = known.points.at(-1);
        if (!last || !samePrice(last, point)) known.points.push(point);
        known.lastSeenAt = takenAt;
      }
    }
    const latest = items.at(-1)?.snapshot.plans.map((plan) => planKey(plan.name)) ?? [];
    for (const key of latest) {
      const plan = series.get(key);
      if (plan) plan.current = true;
    }
    const rank = (key: string) => (latest.includes(key) ? latest.indexOf(key) : latest.length);
    return [...series.entries()].sort(([a], [b]) => rank(a) - rank(b)).map(([, plan]) => plan);
  }
}
