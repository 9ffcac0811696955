import { mapLimit } from "../../async.js";
import type { Table } from "../../store/table.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import {
  INDEXING_PARTITION,
  indexingPartitions,
  LAST_ATTEMPT_PARTITION,
  type SourceItem,
  SourceRecords,
} from "./records.js";

/**
 * When a source still `indexing` counts as stuck. Waiting is never stuck: until the worker begins
 * its message's last delivery, another delivery still comes, however long the queue's backlog (a
 * bulk import ahead of it, a retry's wait), so a queued source is failed only once `queuedMs`
 * (the index queue's message retention) has passed since it was queued: its message can no
 * longer exist. A message lost sooner is seen elsewhere: an enqueue that fails fails the source
 * at once (`Sources.enqueue`), and a message that used up its deliveries without the worker
 * beginning the last one lands in the dead-letter queue, which is alarmed and redriven.
 *
 * Once the last delivery begins (the worker records it, see `SourceRecords.markLastAttempt`),
 * nothing follows it: if it ends without a result (the process crashed, or the worker ran out of
 * time), `lastAttemptMs` later the source is failed. `lastAttemptMs` must exceed the index
 * worker's timeout, so that a last delivery still running is never failed.
 */
export interface StallLimits {
  queuedMs: number;
  lastAttemptMs: number;
}

/** Shards read at once: every shard of both partitions is read on every run. */
const SHARDS_AT_ONCE = 4;

/**
 * Fails the sources stuck in `indexing` (see StallLimits), telling `events`; answers how many.
 * `now` is the watchdog's clock (tests move it instead of waiting). Safe to run concurrently:
 * each failure is a conditional write, so a source is failed (and told) once.
 */
export async function failStalledSources(
  table: Table,
  limits: StallLimits,
  now = Date.now(),
  events?: WebhookEvents,
) {
  const records = new SourceRecords({ table, events });
  const hours = Math.round(limits.queuedMs / 3_600_000);
  const sweeps = [
    ...indexingPartitions(INDEXING_PARTITION).map((partition) => ({
      partition,
      cutoff: now - limits.queuedMs,
      message: `Indexing never began within ${hours} hours, as long as the queue keeps a message; reindex to try again`,
    })),
    ...indexingPartitions(LAST_ATTEMPT_PARTITION).map((partition) => ({
      partition,
      cutoff: now - limits.lastAttemptMs,
      message:
        "The last attempt to index this source ended without a result (it crashed or ran out of time); reindex to try again",
    })),
  ];
  const failed = await mapLimit(sweeps, SHARDS_AT_ONCE, (sweep) =>
    failBefore({ table, records }, sweep.partition, sweep.cutoff, sweep.message),
  );
  return failed.reduce((sum, n) => sum + n, 0);
}

/** Fails the sources of one `gsi1` partition whose time is before `cutoff` (telling `source.failed`). */
async function failBefore(
  { table, records }: { table: Table; records: SourceRecords },
  partition: string,
  cutoff: number,
  message: string,
) {
  const before = new Date(cutoff).toISOString();
  let failed = 0;
  for (;;) {
    const stalled = await table.queryIndex<SourceItem>("gsi1", partition, before, 100);
    let failedNow = 0;
    for (const source of stalled) {
      if (!(await records.fail(source, { code: "stalled", message }))) continue;
      failedNow++;
    }
    failed += failedNow;
    // A full page that failed nothing is the index lagging behind our own writes: stop here.
    if (stalled.length < 100 || failedNow === 0) return failed;
  }
}
