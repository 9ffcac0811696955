/**
 * A workspace's share of a shared worker, as arithmetic only: what the capacity models (checks,
 * webhooks, index, crawl) and the configuration compute from, without importing the queue or the
 * table that `fair-share.ts` runs on.
 */

/** SQS's longest message delay: a deferred message waits at most this long per try. */
export const MAX_DELAY_SECONDS = 900;

/** What a shared worker's share is computed from (docs/operations.md#capacity). */
export interface ShareAssumptions {
  /** Invocations the worker's event source may run at once (the manifest's maxConcurrency). */
  maxConcurrency: number;
  /** The fraction of them one workspace may hold while others wait. */
  workspaceShare: number;
  /** Typical seconds one message of the worker takes. */
  p50Seconds: number;
}

export interface WorkerShare {
  /** Messages of one workspace the worker runs at once; the rest wait their turn. */
  perWorkspace: number;
  /** The first delay of a message put back because its workspace holds all its slots. */
  deferSeconds: number;
}

/**
 * A workspace's share of a worker. One message may hold its whole invocation (a batch ends with
 * its slowest record), so the cap counts invocations, and always leaves at least one to the other
 * workspaces; a put-back message first waits about as long as one of its workspace's slots takes
 * to free.
 */
export function workerShare(a: ShareAssumptions): WorkerShare {
  const perWorkspace = Math.max(
    1,
    Math.min(a.maxConcurrency - 1, Math.floor(a.maxConcurrency * a.workspaceShare)),
  );
  return { perWorkspace, deferSeconds: Math.max(5, Math.ceil(a.p50Seconds / perWorkspace)) };
}

/**
 * The longest delay of a deferred message's next try: `deferSeconds`, doubled each time, at most
 * 900 s. Doubling keeps a large backlog of one workspace (a 1,000-source import behind 3 slots)
 * to a few tries per message instead of dozens; each try waits between half and all of it
 * (`inFairShare`), so a backlog put back at once does not come back at once.
 */
export const deferDelaySeconds = (deferrals: number, deferSeconds: number) =>
  Math.min(MAX_DELAY_SECONDS, deferSeconds * 2 ** Math.min(deferrals, 16));
