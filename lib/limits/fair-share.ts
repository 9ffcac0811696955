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

/**
 * Runs `work` in one of the message's workspace's slots. On the real clock the slot is leased for
 * `SLOT_HEARTBEAT_MS` and renewed while the work runs; on an injected clock (the simulation),
 * which no timer follows, for `leaseMs` (longer than the work can run). When the workspace holds
 * all its slots, the message is not run: it is sent back to its queue with a growing delay and
 * this delivery succeeds (`deferred`), so it
 * occupies no worker while it waits and its receive count (what dead-letters it) does not move.
 * Past `maxDeferrals` it is dropped (`given up`).
 */
export async function inFairShare<M extends Deferrable, R>(
  share: FairShare<M>,
  message: M,
  leaseMs: number,
  work: () => Promise<R>,
): Promise<R | Deferred> {
  const clock = share.now ?? Date.now;
  const term = share.now ? leaseMs : Math.min(leaseMs, SLOT_HEARTBEAT_MS);
  const now = clock();
  const lease = await share.slots.acquire(message.workspaceId, now, now + term);
  if (!lease) return defer(share, message);
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
  try {
    return await work();
  } finally {
    clearInterval(heartbeat);
    await share.slots.release(lease).catch((err) => {
      logger.warn("workspace slot not released; its lease will end it", { ...lease, error: err });
    });
  }
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
