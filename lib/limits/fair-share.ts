import { logger } from "../log.js";
import { count, type MetricName } from "../metrics.js";
import type { Queue } from "../store/queue.js";
import { deferDelaySeconds } from "./shares.js";
import type { WorkspaceSlots } from "./workspace-slots.js";

/** A message that a workspace's slots can hold back: it names its workspace, and its tries. */
export interface Deferrable {
  workspaceId: string;
  /** Times it was put back because its workspace held all its slots. */
  deferrals?: number | undefined;
}

/** How one worker keeps each workspace to its share. */
export interface FairShare<M extends Deferrable> {
  slots: WorkspaceSlots;
  /** The worker's own queue: a message over its workspace's share goes back to it. */
  queue: Queue<M>;
  deferSeconds: number;
  /** Tries after which a message is dropped (its work is asked for again later); none: never. */
  maxDeferrals?: number;
  /** Counted per put-back message, and per dropped one. */
  metrics: { deferred: MetricName; givenUp?: MetricName };
  now?: () => number;
}

export type Deferred = "deferred" | "given up";

/**
 * A slot's lease on the real clock: renewed every third of it while its work runs, so a holder
 * that dies (a crashed or timed-out invocation) frees its slot within this, not within the
 * worker's whole timeout.
 */
export const SLOT_HEARTBEAT_MS = 15_000;

/** A slot held while work runs: its lease renewed on the real clock until `release`. */
interface Held {
  release(): Promise<void>;
}

/**
 * Takes one of the workspace's slots: on the real clock leased for `SLOT_HEARTBEAT_MS` and renewed
 * every third of it until released; on an injected clock (the simulation), which no timer
 * follows, for `leaseMs` (longer than the work can run). Undefined when the workspace holds all.
 */
async function holdSlot(
  share: Pick<FairShare<Deferrable>, "slots" | "now">,
  workspaceId: string,
  leaseMs: number,
): Promise<Held | undefined> {
  const clock = share.now ?? Date.now;
  const term = share.now ? leaseMs : Math.min(leaseMs, SLOT_HEARTBEAT_MS);
  const now = clock();
  const lease = await share.slots.acquire(workspaceId, now, now + term);
  if (!lease) return undefined;
  const heartbeat = share.now
    ? undefined
    : setInterval(() => {
        share.slots.renew(lease, clock() + term).catch((err: unknown) => {
          logger.warn("workspace slot not renewed; it may be taken meanwhile", {
            ...lease,
            error: err,
          });
        });
      }, term / 3);
  return {
    async release() {
      clearInterval(heartbeat);
      await share.slots.release(lease).catch((err) => {
        logger.warn("workspace slot not released; its lease will end it", { ...lease, error: err });
      });
    },
  };
}

/**
 * Runs `work` in one of the message's workspace's slots (see `holdSlot`). When the workspace
 * holds all its slots, the message is not run: it is sent back to its queue with a growing delay
 * and this delivery succeeds (`deferred`), so it occupies no worker while it waits and its
 * receive count (what dead-letters it) does not move. Past `maxDeferrals` it is dropped
 * (`given up`).
 */
export async function inFairShare<M extends Deferrable, R>(
  share: FairShare<M>,
  message: M,
  leaseMs: number,
  work: () => Promise<R>,
): Promise<R | Deferred> {
  const held = await holdSlot(share, message.workspaceId, leaseMs);
  if (!held) return defer(share, message);
  try {
    return await work();
  } finally {
    await held.release();
  }
}

/**
 * One invocation's fair share, for the workers whose share counts invocations (index and crawl:
 * `lib/limits/worker-shares.ts`): the records of one workspace in a batch run together, so they
 * hold one slot between them, taken by the first and given back when the last ends, and are all
 * put back when none is free. A slot per record instead made a workspace's share its slots'
 * number of records: a lone crawl's batches of 5 ran 4 pages and sent the rest back to wait out
 * doubling delays while the worker stood idle (bench figure 4). Make one per batch.
 */
export function invocationShare<M extends Deferrable>(share: FairShare<M>, leaseMs: number) {
  const holds = new Map<string, { held: Promise<Held | undefined>; users: number }>();
  return async <R>(message: M, work: () => Promise<R>): Promise<R | Deferred> => {
    const { workspaceId } = message;
    let hold = holds.get(workspaceId);
    if (!hold) {
      hold = { held: holdSlot(share, workspaceId, leaseMs), users: 0 };
      holds.set(workspaceId, hold);
    }
    const mine = hold;
    mine.users++;
    try {
      const held = await mine.held;
      if (!held) return await defer(share, message);
      return await work();
    } finally {
      if (--mine.users === 0) {
        holds.delete(workspaceId);
        await (await mine.held.catch(() => undefined))?.release();
      }
    }
  };
}

async function defer<M extends Deferrable>(share: FairShare<M>, message: M): Promise<Deferred> {
  const deferrals = message.deferrals ?? 0;
  if (share.maxDeferrals !== undefined && deferrals >= share.maxDeferrals) {
    if (share.metrics.givenUp) count(share.metrics.givenUp);
    logger.warn("message given up: its workspace held its slots too long", {
      workspaceId: message.workspaceId,
      deferrals,
    });
    return "given up";
  }
  const longest = deferDelaySeconds(deferrals, share.deferSeconds);
  await share.queue.send(
    { ...message, deferrals: deferrals + 1 },
    longest / 2 + (Math.random() * longest) / 2,
  );
  count(share.metrics.deferred);
  return "deferred";
}
