import type { Stores } from "../../lib/store/clients.js";
import type { Cell, Column } from "./figure.js";
import { summarize } from "./stats.js";

/**
 * Counts and times every AWS SDK call the bench's own store clients make, per service: where an
 * in-process service call spends its time, when the emulators' round trips are most of it.
 */

const MIDDLEWARE = { step: "initialize", name: "benchStoreCalls" } as const;

export interface Measured {
  /** Wall time of the whole call. */
  ms: number;
  /** Calls per service, e.g. "DynamoDB 3 · S3 4 · SQS 1"; empty when none. */
  calls: string;
  /** Time inside store calls, summed (overlapping calls count in full). */
  storeMs: number;
}

interface Tally {
  calls: number;
  ms: number;
}

export class StoreCalls {
  private readonly tallies = new Map<string, Tally>();

  constructor(stores: Stores) {
    const { table, blobs, indexQueue } = stores;
    table.doc.middlewareStack.add(
      (next) => (args) => this.time("DynamoDB", next, args),
      MIDDLEWARE,
    );
    blobs.s3.middlewareStack.add((next) => (args) => this.time("S3", next, args), MIDDLEWARE);
    indexQueue.sqs.middlewareStack.add(
      (next) => (args) => this.time("SQS", next, args),
      MIDDLEWARE,
    );
  }

  private async time<A, R>(service: string, next: (args: A) => Promise<R>, args: A): Promise<R> {
    const started = performance.now();
    try {
      return await next(args);
    } finally {
      const tally = this.tallies.get(service) ?? { calls: 0, ms: 0 };
      tally.calls++;
      tally.ms += performance.now() - started;
      this.tallies.set(service, tally);
    }
  }

  /** Times `fn`, and counts and times the store calls it makes. */
  async measure(fn: () => Promise<unknown>): Promise<Measured> {
    this.tallies.clear();
    const started = performance.now();
    await fn();
    const ms = performance.now() - started;
    const entries = [...this.tallies].sort(([a], [b]) => a.localeCompare(b));
    return {
      ms,
      calls: entries.map(([service, t]) => `${service} ${t.calls}`).join(" · "),
      storeMs: entries.reduce((sum, [, t]) => sum + t.ms, 0),
    };
  }
}

const watched = new WeakMap<Stores, StoreCalls>();

/** The counter of a set of store clients (one per set: the SDK refuses a middleware twice). */
export function storeCalls(stores: Stores): StoreCalls {
  let calls = watched.get(stores);
  if (!calls) {
    calls = new StoreCalls(stores);
    watched.set(stores, calls);
  }
  return calls;
}

/** The columns `storeCells` fills. */
export const storeColumns: Column[] = [
  { key: "store", label: "in store calls", unit: "ms" },
  { key: "calls", label: "store calls" },
];

/** The calls most samples made (a cold first call may make more than the rest). */
function usualCalls(samples: Measured[]): string {
  const counts = new Map<string, number>();
  for (const { calls } of samples) counts.set(calls, (counts.get(calls) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] || "none";
}

/** A row's store columns from its samples, and its wall time under `timeKey` if given. */
export function storeCells(samples: Measured[], timeKey?: string): Record<string, Cell> {
  const made = samples.some((s) => s.calls);
  return {
    ...(timeKey ? { [timeKey]: summarize(samples.map((s) => s.ms)) } : {}),
    store: made ? summarize(samples.map((s) => s.storeMs)) : null,
    calls: usualCalls(samples),
  };
}
