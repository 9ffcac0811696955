import { mapLimit } from "../../async.js";
import { atMost, between, type Condition, lessThan } from "../../store/conditions.js";
import type { Item, Table } from "../../store/table.js";
import { nextPace, type Observation, startGap } from "../../web/pace.js";
import { type CrawlItem, expiredNow, helperExpiry } from "./records.js";

/**
 * The pace of each host a crawl fetches from: `CRAWLHOST#{crawlId}#{host}`, the next time the host
 * may be fetched and the gap its response times call for (the adaptive pace of
 * `lib/web/pace.ts`). Every write stamps the item to expire `CRAWL_HELPER_DAYS` later; its crawl's
 * end lets it expire at once. `HostPace` is the only code that writes them.
 */

interface HostPaceItem extends Item {
  /** Epoch ms of the host's next free slot. */
  nextAt: number;
  gapMs?: number;
}

/** A host's turn: the slot this page may fetch in, or when to ask again (its turn is further off). */
export type HostTurn = { slot: number } | { retryAt: number };

/** The host is idle at `now`: its next slot has come. */
const idleAt = (now: number): Condition => atMost("nextAt", now);

/** The host's next slot is ahead of `now`, but no further than `limit`. */
const nextSlotWithin = (now: number, limit: number): Condition => between("nextAt", now, limit);

/** The host's next slot comes before `until`: a pause moves it out, never in. */
const nextSlotBefore = (until: number): Condition => lessThan("nextAt", until);

export class HostPace {
  constructor(private readonly deps: { table: Table }) {}

  /**
   * Claims the host's next slot for this caller when it is at most `maxAheadMs` away, moving the
   * host's next slot one gap later: the larger of `floorMs` and the gap its response times call
   * for. A slot further off is not claimed (the caller asks again then), so the slots handed out
   * follow the pace as it adapts. A host with a slot ahead hands out the next one by an atomic
   * addition, which callers racing for it all get in turn without retrying; an idle host's slot
   * (now) goes to the one conditional write that finds it idle.
   */
  async claimSlot(
    crawl: CrawlItem,
    host: string,
    floorMs: number,
    now: number,
    maxAheadMs: number,
  ): Promise<HostTurn> {
    const { table } = this.deps;
    const key = hostKey(crawl, host);
    const limit = now + maxAheadMs;
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await table.get<HostPaceItem>(key.pk, key.sk);
      if (current && current.nextAt > limit) return { retryAt: current.nextAt };
      const gapMs = Math.max(floorMs, current?.gapMs ?? startGap(floorMs));
      if (!current) {
        if (await table.create({ ...key, nextAt: now + gapMs, gapMs, ...helperExpiry() })) {
          return { slot: now };
        }
      } else if (current.nextAt <= now) {
        if (
          await table.change(key.pk, key.sk, {
            set: { nextAt: now + gapMs, ...helperExpiry() },
            condition: idleAt(now),
          })
        ) {
          return { slot: now };
        }
      } else {
        const moved = await table.change<HostPaceItem>(key.pk, key.sk, {
          add: { nextAt: gapMs },
          set: helperExpiry(),
          condition: nextSlotWithin(now, limit),
        });
        if (moved) return { slot: moved.nextAt - gapMs };
      }
    }
    throw new Error(`Too much contention for the politeness slot of ${host}`);
  }

  /**
   * Adapts the host's pace to what a request showed (`nextPace`): its gap, and a pause it asked
   * for, which moves its next slot out. Writes race harmlessly: the last observation wins.
   */
  async observe(
    crawl: CrawlItem,
    host: string,
    observation: Observation,
    floorMs: number,
  ): Promise<void> {
    const { table } = this.deps;
    const key = hostKey(crawl, host);
    const current = await table.get<HostPaceItem>(key.pk, key.sk);
    const pace = nextPace(current?.gapMs ?? startGap(floorMs), observation, floorMs);
    await table.change(key.pk, key.sk, {
      set: { gapMs: pace.gapMs, ...helperExpiry() },
      upsert: true,
    });
    if (pace.pauseUntil !== undefined) {
      await table.change(key.pk, key.sk, {
        set: { nextAt: pace.pauseUntil },
        condition: nextSlotBefore(pace.pauseUntil),
        upsert: true,
      });
    }
  }

  /** Lets the host paces of an ended crawl expire now. */
  async expire(crawl: CrawlItem, nowMs = Date.now()): Promise<void> {
    const { table } = this.deps;
    const paces = await table.all<Item>(crawl.pk, hostPrefix(crawl), ["pk", "sk"]);
    await mapLimit(paces, 8, (p) => table.change(p.pk, p.sk, { set: expiredNow(nowMs) }));
  }
}

const hostPrefix = (crawl: CrawlItem) => `CRAWLHOST#${crawl.crawlId}#`;

const hostKey = (crawl: CrawlItem, host: string) => ({
  pk: crawl.pk,
  sk: `${hostPrefix(crawl)}${host}`,
});
