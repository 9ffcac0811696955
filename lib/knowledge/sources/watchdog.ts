import type { Table } from "../../store/table.js";
import type { WebhookEvents } from "../../webhooks/events.js";
import {
  INDEXING_PARTITION,
  LAST_ATTEMPT_PARTITION,
  type SourceItem,
  SourceRecords,
} from "./records.js";

/**
 * When a source still `indexing` counts as stuck. The signal that tells "stuck" from "waiting" is
 * whether another delivery can still come: until its message's last delivery begins, a source may
 * be queued behind others or waiting for a retry, and only a long `queuedMs` fails it (its message
 * was lost, or the backlog is hopeless). Once the last delivery begins (the worker records it),
 * nothing follows it: if it ends without a result (the process crashed, or the worker ran out of
 * time), `lastAttemptMs` later the source is failed. `lastAttemptMs` must exceed the index
 * worker's timeout, so that a last delivery still running is never failed.
 */
export interface StallLimits {
  queuedMs: number;
  lastAttemptMs: number;
}

/** Fails the sources stuck in `indexing` (see StallLimits), telling `events`; answers how many. */
export async function failStalledSources(
  table: Table,
  limits: StallLimits,
  now = Date.now(),
  events?: WebhookEvents,
) {
  const records = new SourceRecords({ table, events });
  const queued = await failBefore(
    { table, records },
    INDEXING_PARTITION,
    now - limits.queuedMs,
    `Indexing made no progress for ${Math.round(limits.queuedMs / 60_000)} minutes; reindex to try again`,
  );
  const lastAttempt = await failBefore(
    { table, records },
    LAST_ATTEMPT_PARTITION,
    now - limits.lastAttemptMs,
    "The last attempt to index this source ended without a result (it crashed or ran out of time); reindex to try again",
  );
  return queued + lastAttempt;
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
