import { type ShareAssumptions, type WorkerShare, workerShare } from "./shares.js";

/**
 * The index and crawl workers' sizes and each workspace's share of them, from stated
 * assumptions (the check worker's come from lib/competitors/capacity.ts). Pure: the manifest runs
 * the workers with these numbers and the workers' slots read them; docs/operations.md#capacity
 * explains them. To change one, change it here.
 */
export interface WorkerAssumptions extends ShareAssumptions {
  /** Records per invocation. */
  batchSize: number;
  /** The worker's timeout: a slot's lease is as long, so only a crash leaves one to expire. */
  timeoutSeconds: number;
}

export const WORKER_ASSUMPTIONS = {
  // A source is loaded, chunked, embedded and written in a few seconds (bench figure 3). A
  // workspace may hold all invocations but one: a smaller cap put a lone importer's backlog
  // behind doubling waits while invocations stood idle (a 1,000-source import, the suite's load
  // test), and its queued sources are its own earlier work, not another tenant's. Who goes first
  // among tenants is the fair queue's part (MessageGroupId = workspace).
  index: {
    maxConcurrency: 10,
    batchSize: 5,
    timeoutSeconds: 120,
    workspaceShare: 1,
    p50Seconds: 5,
  },
  // A page is fetched and read in about a second (bench figure 4), paced per host; the same
  // share as the index worker's, for the same reason.
  crawl: {
    maxConcurrency: 5,
    batchSize: 5,
    timeoutSeconds: 60,
    workspaceShare: 1,
    p50Seconds: 2,
  },
} satisfies Record<string, WorkerAssumptions>;

export type SharedWorker = keyof typeof WORKER_ASSUMPTIONS;

export const WORKER_SHARES: Record<SharedWorker, WorkerAssumptions & WorkerShare> = {
  index: { ...WORKER_ASSUMPTIONS.index, ...workerShare(WORKER_ASSUMPTIONS.index) },
  crawl: { ...WORKER_ASSUMPTIONS.crawl, ...workerShare(WORKER_ASSUMPTIONS.crawl) },
};
