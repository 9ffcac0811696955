import { mapLimit } from "../async.js";
import { isDomainError, serviceUnavailable } from "../errors.js";
import { inFairShare } from "../limits/fair-share.js";
import { MAX_DELAY_SECONDS } from "../limits/shares.js";
import type { WorkspaceSlots } from "../limits/workspace-slots.js";
import { logger } from "../log.js";
import type { CheckMessage, Queue } from "../store/queue.js";
import type { Table } from "../store/table.js";
import { isDue } from "./cadence.js";
import { CHECK_CAPACITY, type CheckCapacity, sweepDelaySeconds } from "./capacity.js";
import type { Checker } from "./check.js";
import { type Competitors, competitorIndexPage } from "./competitors.js";

/** Requests to SQS at once, each of up to ten messages. */
const SEND_CONCURRENCY = 10;
const SWEEP_PAGE = 100;

async function enqueue(
  queue: Queue<CheckMessage>,
  targets: Array<{ workspaceId: string; competitorId: string }>,
  requestedAt: string,
  delayOf: (workspaceId: string, competitorId: string) => number = () => 0,
  now = Date.now(),
): Promise<number> {
  const delay = (m: CheckMessage) => delayOf(m.workspaceId, m.competitorId);
  const messages = targets.map(({ workspaceId, competitorId }) => {
    const message: CheckMessage = {
      kind: "competitor-check",
      workspaceId,
      competitorId,
      requestedAt,
    };
    // Past SQS's longest delay the check carries its time, and goes round until then.
    if (delay(message) > MAX_DELAY_SECONDS) message.notBefore = now + delay(message) * 1000;
    return message;
  });
  // Ten messages to a request (sendAll's batch): 20,000 checks are 2,000 requests, not 20,000.
  const batches = Array.from({ length: Math.ceil(messages.length / 10) }, (_, i) =>
    messages.slice(i * 10, i * 10 + 10),
  );
  await mapLimit(batches, SEND_CONCURRENCY, (batch) => queue.sendAll(batch, batch.map(delay)));
  return targets.length;
}

/**
 * Queues a check of every competitor of one workspace; answers how many. `service_unavailable`
 * when the queue fails: checks queued before the failure run, and asking again queues no
 * duplicate work.
 */
export async function enqueueWorkspace(
  competitors: Competitors,
  queue: Queue<CheckMessage>,
  workspaceId: string,
  /** Runs before anything is queued, with the number of checks (to take them from a quota). */
  reserve: (count: number) => Promise<unknown> = async () => undefined,
): Promise<number> {
  const ids = await competitors.ids(workspaceId);
  if (ids.length > 0) await reserve(ids.length);
  const targets = ids.map((competitorId) => ({ workspaceId, competitorId }));
  try {
    return await enqueue(queue, targets, new Date().toISOString());
  } catch (err) {
    logger.error("competitor checks could not be queued", { workspaceId, error: err });
    throw serviceUnavailable("Checks could not be queued; try again");
  }
}

/**
 * Queues a check of every competitor due in the hour of `at` (its cadence, `cadence.ts`), of
 * every workspace, a page of the sweep index at a time, each delayed by its step of the capacity
 * model's spread so no host (nor the queue) gets the hour's checks in one burst.
 */
export async function sweepAll(
  table: Table,
  queue: Queue<CheckMessage>,
  capacity: CheckCapacity = CHECK_CAPACITY,
  /**
   * Asked once per check before it is queued: takes it from the workspace's daily
   * `competitor_checks` quota (`scheduledCharge`); a check it refuses is skipped, not queued.
   */
  admit: (workspaceId: string) => Promise<boolean> = async () => true,
  /** The sweep's scheduled time: which hour's competitors are due. */
  at: Date = new Date(),
  /** The clock the spread's times are read from (the fairness simulation's is virtual). */
  now: () => number = Date.now,
): Promise<number> {
  const started = now();
  const requestedAt = new Date(started).toISOString();
  const delayOf = (workspaceId: string, competitorId: string) =>
    sweepDelaySeconds(workspaceId, competitorId, capacity);
  let queued = 0;
  let cursor: string | undefined;
  do {
    const page = await competitorIndexPage(table, SWEEP_PAGE, cursor);
    const due = page.items.filter((item) => isDue(item, at));
    const admits = await mapLimit(due, SEND_CONCURRENCY, (item) => admit(item.workspaceId));
    const admitted = due.filter((_, i) => admits[i]);
    queued += await enqueue(queue, admitted, requestedAt, delayOf, started);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return queued;
}

export type QueuedCheckOutcome =
  | "checked"
  | "gone"
  | "busy"
  | "done already"
  | "deferred"
  | "given up"
  | "not yet";

/** What a queued check needs beside the checker: its workspace's slots, and its queue. */
export interface QueuedCheckDeps {
  checker: Checker;
  competitors: Competitors;
  slots: WorkspaceSlots;
  /** Sends the message back to the checks queue after a delay. */
  queue: Queue<CheckMessage>;
  capacity?: CheckCapacity;
  now?: () => number;
}

/**
 * Runs one queued check. A check not yet due (`notBefore`) goes back to the queue for the rest of
 * its wait, at most 900 s at a time, holding no slot (`not yet`). A competitor deleted since, one
 * checked since the request, or one whose check is running right now needs nothing more: the
 * message succeeds without a second check, so duplicate and late deliveries change nothing. A
 * check whose workspace holds all its slots is sent back with a growing delay instead of run
 * (`deferred`), at most `maxDeferrals` times, then given up: the next sweep asks again. Anything
 * else that fails throws, to be retried.
 */
export async function runQueuedCheck(
  deps: QueuedCheckDeps,
  message: CheckMessage,
): Promise<QueuedCheckOutcome> {
  const { checker, competitors, slots, queue } = deps;
  const capacity = deps.capacity ?? CHECK_CAPACITY;
  const now = deps.now ?? Date.now;
  const wait = message.notBefore === undefined ? 0 : (message.notBefore - now()) / 1000;
  if (wait > 0) {
    await queue.send(message, wait);
    return "not yet";
  }
  const item = await competitors.find(message.workspaceId, message.competitorId);
  if (!item) return "gone";
  if (item.lastCheckedAt && item.lastCheckedAt >= message.requestedAt) return "done already";
  const share = {
    slots,
    queue,
    deferSeconds: capacity.deferSeconds,
    maxDeferrals: capacity.maxDeferrals,
    metrics: { deferred: "CompetitorChecksDeferred", givenUp: "CompetitorChecksGivenUp" },
    now,
  } as const;
  // The slot's lease outlasts the check's own bound: only a crashed check leaves it to expire.
  return inFairShare(share, message, checker.boundMs(), async () => {
    try {
      const result = await checker.check(message.workspaceId, message.competitorId);
      logger.info("competitor checked", { ...message, ok: result.ok, changed: result.changed });
      return "checked" as const;
    } catch (err) {
      if (isDomainError(err, "not_found")) return "gone" as const;
      if (isDomainError(err, "conflict")) return "busy" as const;
      throw err;
    }
  });
}
