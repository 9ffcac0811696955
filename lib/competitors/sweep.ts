import { mapLimit } from "../async.js";
import { isDomainError, serviceUnavailable } from "../errors.js";
import { logger } from "../log.js";
import type { CheckMessage, Queue } from "../store/queue.js";
import type { Table } from "../store/table.js";
import type { Checker } from "./check.js";
import { type Competitors, competitorIndexPage } from "./competitors.js";

/** Messages sent at once; SQS takes them one call each. */
const SEND_CONCURRENCY = 10;
const SWEEP_PAGE = 100;

async function enqueue(
  queue: Queue<CheckMessage>,
  targets: Array<{ workspaceId: string; competitorId: string }>,
  requestedAt: string,
): Promise<number> {
  await mapLimit(targets, SEND_CONCURRENCY, ({ workspaceId, competitorId }) =>
    queue.send({
      kind: "competitor-check",
      workspaceId,
      competitorId,
      requestedAt,
    } satisfies CheckMessage),
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

/** Queues a check of every competitor of every workspace, a page of the sweep index at a time. */
export async function sweepAll(table: Table, queue: Queue<CheckMessage>): Promise<number> {
  const requestedAt = new Date().toISOString();
  let queued = 0;
  let cursor: string | undefined;
  do {
    const page = await competitorIndexPage(table, SWEEP_PAGE, cursor);
    queued += await enqueue(queue, page.items, requestedAt);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return queued;
}

export type QueuedCheckOutcome = "checked" | "gone" | "busy" | "done already";

/**
 * Runs one queued check. A competitor deleted since, one checked since the request, or one whose
 * check is running right now needs nothing more: the message succeeds without a second check, so
 * duplicate and late deliveries change nothing. Anything else that fails throws, to be retried.
 */
export async function runQueuedCheck(
  checker: Checker,
  competitors: Competitors,
  message: CheckMessage,
): Promise<QueuedCheckOutcome> {
  const item = await competitors.find(message.workspaceId, message.competitorId);
  if (!item) return "gone";
  if (item.lastCheckedAt && item.lastCheckedAt >= message.requestedAt) return "done already";
  try {
    const result = await checker.check(message.workspaceId, message.competitorId);
    logger.info("competitor checked", { ...message, ok: result.ok, changed: result.changed });
    return "checked";
  } catch (err) {
    if (isDomainError(err, "not_found")) return "gone";
    if (isDomainError(err, "conflict")) return "busy";
    throw err;
  }
}
