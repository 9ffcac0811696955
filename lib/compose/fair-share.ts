import type { Config } from "../config.js";
import type { Deferrable, FairShare } from "../limits/fair-share.js";
import { type SharedWorker, WORKER_SHARES } from "../limits/worker-shares.js";
import { WorkspaceSlots } from "../limits/workspace-slots.js";
import type { MetricName } from "../metrics.js";
import type { Queue } from "../store/queue.js";
import type { Table } from "../store/table.js";

const SLOTS: Record<SharedWorker, (config: Config) => number> = {
  index: (config) => config.INDEX_WORKSPACE_SLOTS,
  crawl: (config) => config.CRAWL_WORKSPACE_SLOTS,
};

const DEFERRED: Record<SharedWorker, MetricName> = {
  index: "SourcesDeferred",
  crawl: "CrawlPagesDeferred",
};

/**
 * A shared worker's fair share (lib/limits/fair-share.ts): the configured slots per workspace,
 * `{WORKER}SLOT#n` items in each workspace's partition, and its own queue to put back a message
 * over them. A put-back message waits as long as its workspace's earlier work takes, never given
 * up: a source or page left waiting has no other message to bring it back.
 */
export function workerFairShare<M extends Deferrable>(
  config: Config,
  table: Table,
  queue: Queue<M>,
  worker: SharedWorker,
): { share: FairShare<M>; leaseMs: number } {
  const model = WORKER_SHARES[worker];
  const slots = new WorkspaceSlots(table, `${worker.toUpperCase()}SLOT#`, SLOTS[worker](config));
  return {
    share: {
      slots,
      queue,
      deferSeconds: model.deferSeconds,
      metrics: { deferred: DEFERRED[worker] },
    },
    leaseMs: model.timeoutSeconds * 1000,
  };
}
