import { mapLimit } from "../async.js";
import { isDomainError, serviceUnavailable } from "../errors.js";
import { logger } from "../log.js";
import { count } from "../metrics.js";
import type { CheckMessage, Queue } from "../store/queue.js";
import type { Table } from "../store/table.js";
import {
  CHECK_CAPACITY,
  type CheckCapacity,
  deferDelaySeconds,
  sweepDelaySeconds,
} from "./capacity.js";
import type { Checker } from "./check.js";
import type { CheckSlots } from "./check-slots.js";
import { type Competitors, competitorIndexPage } from "./competitors.js";

/** Messages sent at once; SQS takes them one call each. */
const SEND_CONCURRENCY = 10;
const SWEEP_PAGE = 100;

async function enqueue(
  queue: Queue<CheckMessage>,
  targets: Array<{ workspaceId: string; competitorId: string }>,
  requestedAt: string,
  delayOf: (workspaceId: string, competitorId: string) => number = () => 0,
): Promise<number> {
  await mapLimit(targets, SEND_CONCURRENCY, ({ workspaceId, competitorId }) =>
    queue.send(
      { kind: "competitor-check", workspaceId, competitorId, requestedAt } satisfies CheckMessage,
      delayOf(workspaceId, competitorId),
    ),
  );
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
 * Queues a check of every competitor of every workspace, a page of the sweep index at a time,
 * each delayed by its step of the capacity model's spread so no host (nor the queue) gets the
 * night's checks in one burst.
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
): Promise<number> {
  const requestedAt = new Date().toISOString();
  const delayOf = (workspaceId: string, competitorId: string) =>
    sweepDelaySeconds(workspaceId, competitorId, capacity);
  let queued = 0;
  let cursor: string | undefined;
  do {
    const page = await competitorIndexPage(table, SWEEP_PAGE, cursor);
    const admits = await mapLimit(page.items, SEND_CONCURRENCY, (item) => admit(item.workspaceId));
    const admitted = page.items.filter((_, i) => admits[i]);
    queued += await enqueue(queue, admitted, requestedAt, delayOf);
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
  | "given up";

/** What a queued check needs beside the checker: its workspace's slots, and its queue. */
export interface QueuedCheckDeps {
  checker: Checker;
  competitors: Competitors;
  slots: CheckSlots;
  /** Sends the message back to the checks queue after a delay. */
  queue: Queue<CheckMessage>;
  capacity?: CheckCapacity;
  now?: () => number;
}

/**
 * Runs one queued check. A competitor deleted since, one checked since the request, or one whose
 * check is running right now needs nothing more: the message succeeds without a second check, so
 * duplicate and late deliveries change nothing. A check whose workspace holds all its slots is
 * sent back with a growing delay instead of run (`deferred`), at most `maxDeferrals` times, then
 * given up: the next sweep asks again. Anything else that fails throws, to be retried.
 */
export async function runQueuedCheck(
  deps: QueuedCheckDeps,
  message: CheckMessage,
): Promise<QueuedCheckOutcome> {
  const { checker, competitors, slots } = deps;
  const capacity = deps.capacity ?? CHECK_CAPACITY;
  const item = await competitors.find(message.workspaceId, message.competitorId);
  if (!item) return "gone";
  if (item.lastCheckedAt && item.lastCheckedAt >= message.requestedAt) return "done already";
  const now = (deps.now ?? Date.now)();
  // The slot's lease outlasts the check's own bound: only a crashed check leaves it to expire.
  const lease = await slots.acquire(message.workspaceId, now, now + checker.boundMs());
  if (!lease) return defer(deps, message, capacity);
  try {
    const result = await checker.check(message.workspaceId, message.competitorId);
    logger.info("competitor checked", { ...message, ok: result.ok, changed: result.changed });
    return "checked";
  } catch (err) {
    if (isDomainError(err, "not_found")) return "gone";
    if (isDomainError(err, "conflict")) return "busy";
    throw err;
  } finally {
    await slots.release(lease).catch((err) => {
      logger.warn("check slot not released; its lease will end it", { ...lease, error: err });
    });
  }
}

async function defer(
  deps: QueuedCheckDeps,
  message: CheckMessage,
  capacity: CheckCapacity,
): Promise<QueuedCheckOutcome> {
  const deferrals = message.deferrals ?? 0;
  if (deferrals >= capacity.maxDeferrals) {
    count("CompetitorChecksGivenUp");
    logger.warn("competitor check given up: its workspace held its slots too long", message);
    return "given up";
  }
  await deps.queue.send(
    { ...message, deferrals: deferrals + 1 },
    deferDelaySeconds(deferrals, capacity),
  );
  count("CompetitorChecksDeferred");
  return "deferred";
}
