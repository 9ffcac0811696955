import {
  deferDelaySeconds as delayAfter,
  MAX_DELAY_SECONDS,
  workerShare,
} from "../limits/shares.js";

/**
 * The checks queue's capacity, computed from stated assumptions instead of guessed: how many
 * invocations the competitor-check-worker may run at once and with how many checks each, how many
 * of those one workspace may hold, and how the nightly sweep spreads its messages. Pure: the
 * manifest, the worker and the sweep read the numbers; docs/operations.md#capacity explains them.
 */

export interface CapacityAssumptions {
  /** Workspaces that track competitors. */
  tenants: number;
  /** Competitors each of them tracks, on average ... */
  competitorsPerTenant: number;
  /** ... and at most (MAX_COMPETITORS_PER_WORKSPACE): how long one workspace's list may wait. */
  maxCompetitorsPerTenant: number;
  /** Wall time of one queued check, reading the site and writing the results. */
  checkSeconds: {
    p50: number;
    p95: number;
  };
  /** Time the nightly sweep's checks must all finish in. */
  sweepWindowSeconds: number;
  /** Time between two runs of the sweep (its schedule): a run's spread ends before the next. */
  sweepIntervalSeconds: number;
  /** Capacity kept above what the mean needs: retries, slow nights, a sweep that runs late. */
  headroom: number;
  /**
   * Checks one invocation runs at once (they wait on the network, not the CPU): the batch size,
   * so no record of a batch waits for another to end.
   */
  checksPerInvocation: number;
  /** Concurrent executions of the account (Lambda's default quota is 1,000) … */
  accountConcurrency: number;
  /** … and the most of them the check worker may take, leaving the rest to the API and workers. */
  accountShare: number;
  /** The most of the worker's invocations one workspace may hold while others wait. */
  workspaceShare: number;
  /** A site's requests per check, robots.txt included (CHECK_MAX_FETCHES). */
  fetchesPerCheck: number;
  /** Least time between two requests to one host (CHECK_POLITENESS_MS). */
  politenessMs: number;
  /** Workspaces that track one and the same host, at most, expected (a popular competitor). */
  tenantsPerHost: number;
  /** A check's hard bound: its reading budget (CHECK_BUDGET_MS) plus briefs and storage. */
  checkBoundSeconds: number;
}

export const CAPACITY_ASSUMPTIONS: CapacityAssumptions = {
  tenants: 1_000,
  competitorsPerTenant: 20,
  maxCompetitorsPerTenant: 100,
  checkSeconds: { p50: 15, p95: 45 },
  sweepWindowSeconds: 2 * 3600,
  sweepIntervalSeconds: 3600,
  headroom: 1.25,
  checksPerInvocation: 2,
  accountConcurrency: 1_000,
  accountShare: 0.1,
  workspaceShare: 0.05,
  fetchesPerCheck: 25,
  politenessMs: 1_000,
  tenantsPerHost: 30,
  // 45 s of reading, 5 s of briefs, 10 s of storage (lib/competitors/check.ts).
  checkBoundSeconds: 60,
};

export { MAX_DELAY_SECONDS };

/** The event source mapping's lowest and highest maximum concurrency. */
const MIN_EVENT_SOURCE_CONCURRENCY = 2;
const MAX_EVENT_SOURCE_CONCURRENCY = 1_000;

export interface CheckCapacity {
  /** The sweep's checks: tenants × competitors. */
  checks: number;
  /**
   * Mean seconds per check assumed: halfway between p50 and p95, a pessimistic stand-in for a
   * right-skewed distribution that the check's budget cuts off.
   */
  meanCheckSeconds: number;
  /** Checks that must run at once to finish the sweep in its window, with the headroom. */
  concurrentChecks: number;
  /** The worker's event source: records per invocation, and invocations at once. */
  batchSize: number;
  maxConcurrency: number;
  /** Checks in flight at once at most: maxConcurrency × batchSize. */
  slots: number;
  /** Hours the sweep takes at the mean check time with every slot busy. */
  sweepHours: number;
  /** Checks one workspace may run at once (its in-flight cap); the rest wait their turn. */
  workspaceSlots: number;
  /** The first delay of a check put back because its workspace holds all its slots. */
  deferSeconds: number;
  /** Times a check is put back before it is given up (its request is stale by then). */
  maxDeferrals: number;
  /**
   * The sweep spreads its messages evenly over this many seconds: as long as every slot takes to
   * run the checks at the mean (`sweepHours`), so they arrive no faster than the worker ends
   * them, but no longer than until the sweep's next run. Longer than SQS's 900 s delay: a check
   * due later goes round the queue every 900 s (`notBefore`) until its time ...
   */
  spreadSeconds: number;
  /** ... in this many delay steps. */
  spreadSteps: number;
  /** Requests per second a host tracked by `tenantsPerHost` workspaces gets, on average. */
  hostRequestsPerSecond: number;
  /** Fraction of the account's concurrency the worker may take. */
  accountFraction: number;
}

/** What the assumptions give; throws when they cannot be met (the manifest then fails to load). */
export function checkCapacity(a: CapacityAssumptions = CAPACITY_ASSUMPTIONS): CheckCapacity {
  const checks = a.tenants * a.competitorsPerTenant;
  const meanCheckSeconds = (a.checkSeconds.p50 + a.checkSeconds.p95) / 2;
  const concurrentChecks = Math.ceil(
    ((checks * meanCheckSeconds) / a.sweepWindowSeconds) * a.headroom,
  );
  const batchSize = Math.max(1, Math.min(10, Math.floor(a.checksPerInvocation)));
  const allowed = Math.floor(a.accountConcurrency * a.accountShare);
  const wanted = Math.max(MIN_EVENT_SOURCE_CONCURRENCY, Math.ceil(concurrentChecks / batchSize));
  if (wanted > Math.min(allowed, MAX_EVENT_SOURCE_CONCURRENCY)) {
    throw new Error(
      `the checks need ${wanted} concurrent invocations, over the ${allowed} the account share allows`,
    );
  }
  const maxConcurrency = wanted;
  const slots = maxConcurrency * batchSize;
  // The same share as every shared worker's (lib/limits/fair-share.ts).
  const { perWorkspace: workspaceSlots, deferSeconds } = workerShare({
    maxConcurrency,
    workspaceShare: a.workspaceShare,
    p50Seconds: a.checkSeconds.p50,
  });
  // Waits double each time (capped at SQS's 900 s; each at least half its longest): enough for
  // the longest list of one workspace to pass through its slots with every check at its bound.
  const drainSeconds = Math.ceil(a.maxCompetitorsPerTenant / workspaceSlots) * a.checkBoundSeconds;
  let maxDeferrals = 0;
  for (let waited = 0; waited < drainSeconds; maxDeferrals++) {
    waited += delayAfter(maxDeferrals, deferSeconds) / 2;
  }
  // What every slot needs for the checks at the mean: at most the window less its headroom, by
  // the slots' construction.
  const sweepSeconds = (checks * meanCheckSeconds) / slots;
  const spreadSeconds = Math.min(Math.ceil(sweepSeconds), a.sweepIntervalSeconds);
  return {
    checks,
    meanCheckSeconds,
    concurrentChecks,
    batchSize,
    maxConcurrency,
    slots,
    sweepHours: sweepSeconds / 3600,
    workspaceSlots,
    deferSeconds,
    maxDeferrals,
    spreadSeconds,
    spreadSteps: Math.max(1, Math.floor(spreadSeconds / a.checkSeconds.p50)),
    hostRequestsPerSecond: (a.tenantsPerHost * a.fetchesPerCheck) / spreadSeconds,
    accountFraction: maxConcurrency / a.accountConcurrency,
  };
}

/** The numbers the service runs with. */
export const CHECK_CAPACITY = checkCapacity();

/** The longest delay of a deferred check's next try (lib/limits/fair-share.ts). */
export const deferDelaySeconds = (deferrals: number, capacity = CHECK_CAPACITY) =>
  delayAfter(deferrals, capacity.deferSeconds);

/** FNV-1a: a stable, evenly spread hash of a string. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The delay the sweep gives one competitor's check: its step of the spread, from a hash of the
 * workspace and competitor, so a night's checks (and those of a host many workspaces track) reach
 * the queue evenly over `spreadSeconds` instead of in one burst, and on the same step every night.
 */
export function sweepDelaySeconds(
  workspaceId: string,
  competitorId: string,
  capacity = CHECK_CAPACITY,
): number {
  const steps = Math.max(1, Math.min(capacity.spreadSteps, capacity.spreadSeconds));
  const step = hash(`${workspaceId}#${competitorId}`) % steps;
  return Math.floor((step * capacity.spreadSeconds) / steps);
}
