import { type ShareAssumptions, type WorkerShare, workerShare } from "../limits/shares.js";

/**
 * The webhooks worker's size, each workspace's share of it and each endpoint's circuit breaker,
 * from stated assumptions. Pure: the manifest runs the worker with these numbers, the deliverer
 * reads them, docs/webhooks.md#fairness explains them and test/webhooks/capacity.test.ts holds
 * them to their promises. To change one, change it here.
 */
export interface WebhookAssumptions extends ShareAssumptions {
  /** Workspaces with endpoints ... */
  tenants: number;
  /** ... and the deliveries each asks for in an hour, on average. */
  deliveriesPerTenantPerHour: number;
  /** Capacity kept above that mean: bursts (an import's events), retries. */
  headroom: number;
  /** Records per invocation: they run at once, each waiting on its own endpoint. */
  batchSize: number;
  /** Longest an endpoint may take to answer one attempt (Standard Webhooks asks receivers to be quick). */
  attemptTimeoutSeconds: number;
  /** Signing, the log's writes and the lease's own: what an attempt's lease adds to its timeout. */
  attemptMarginSeconds: number;
  /** Consecutive failed attempts that open an endpoint's circuit. */
  breakerThreshold: number;
  /** The first cool-off of an open circuit, doubled each time it opens again, up to the most. */
  coolOffSeconds: number;
  maxCoolOffSeconds: number;
  /** Deferrals of one attempt (endpoint busy or circuit open) before it counts as failed. */
  maxDeferrals: number;
}

export const WEBHOOK_ASSUMPTIONS: WebhookAssumptions = {
  tenants: 1_000,
  deliveriesPerTenantPerHour: 100,
  headroom: 3,
  // A receiver answers in well under a second (it queues the work and says 200).
  p50Seconds: 0.5,
  batchSize: 10,
  maxConcurrency: 5,
  // Two of five invocations: a workspace with a hung endpoint keeps a slot for its healthy ones.
  workspaceShare: 0.4,
  attemptTimeoutSeconds: 10,
  attemptMarginSeconds: 10,
  breakerThreshold: 5,
  coolOffSeconds: 30,
  maxCoolOffSeconds: 3_600,
  // 5 s, 10 s, 15 s… (fair-share.ts): about 1.8 hours behind a busy endpoint, or 50 openings.
  maxDeferrals: 50,
};

export interface WebhookCapacity extends WorkerShare {
  batchSize: number;
  maxConcurrency: number;
  /** Attempts in flight at once, at most: maxConcurrency × batchSize. */
  slots: number;
  /** Deliveries an hour the worker carries with every slot busy at the p50. */
  deliveriesPerHour: number;
  /** Deliveries an hour the tenants ask for, with the headroom. */
  neededPerHour: number;
  attemptTimeoutMs: number;
  /** How long an attempt holds its endpoint's lease and its workspace's slot, at most. */
  leaseMs: number;
  /** The worker's timeout must leave a first attempt its whole lease. */
  minWorkerTimeoutSeconds: number;
  breaker: { threshold: number; coolOffMs: number; maxCoolOffMs: number };
  maxDeferrals: number;
}

/** What the assumptions give; throws when the worker cannot carry the deliveries they ask for. */
export function webhookCapacity(a: WebhookAssumptions = WEBHOOK_ASSUMPTIONS): WebhookCapacity {
  const slots = a.maxConcurrency * a.batchSize;
  const deliveriesPerHour = Math.floor((slots * 3600) / a.p50Seconds);
  const neededPerHour = Math.ceil(a.tenants * a.deliveriesPerTenantPerHour * a.headroom);
  if (neededPerHour > deliveriesPerHour) {
    throw new Error(
      `webhooks need ${neededPerHour} deliveries an hour, over the ${deliveriesPerHour} the worker carries`,
    );
  }
  const leaseMs = (a.attemptTimeoutSeconds + a.attemptMarginSeconds) * 1000;
  return {
    batchSize: a.batchSize,
    maxConcurrency: a.maxConcurrency,
    slots,
    deliveriesPerHour,
    neededPerHour,
    ...workerShare(a),
    attemptTimeoutMs: a.attemptTimeoutSeconds * 1000,
    leaseMs,
    minWorkerTimeoutSeconds: leaseMs / 1000,
    breaker: {
      threshold: a.breakerThreshold,
      coolOffMs: a.coolOffSeconds * 1000,
      maxCoolOffMs: a.maxCoolOffSeconds * 1000,
    },
    maxDeferrals: a.maxDeferrals,
  };
}

/** The numbers the service runs with. */
export const WEBHOOK_CAPACITY = webhookCapacity();
