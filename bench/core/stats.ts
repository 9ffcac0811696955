/** What every timed figure reports: the spread of repeated samples, never a single run. */
export interface Summary {
  n: number;
  median: number;
  p95: number;
  min: number;
  max: number;
}

/** The q-quantile by linear interpolation between closest ranks (R's type 7, numpy's default). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  const a = sorted[low] as number;
  const b = sorted[high] as number;
  return a + (b - a) * (at - low);
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    median: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    min: sorted[0] ?? Number.NaN,
    max: sorted.at(-1) ?? Number.NaN,
  };
}

export function isSummary(value: unknown): value is Summary {
  return typeof value === "object" && value !== null && "median" in value && "p95" in value;
}
