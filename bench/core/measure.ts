/** Milliseconds an async call takes, by the monotonic clock. */
export async function time(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** Milliseconds a synchronous call takes. */
export function timeSync(fn: () => unknown): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

/**
 * Runs every case once per round, in the same order each round, and collects what each answers
 * (its own measurement: a case times only the part it is about); a case is told the round, so
 * cases of one round can work on the same input. Interleaving a subject with its
 * floor means a burst of load from a neighbour on the shared machine lands on both, so their
 * ratio holds even when absolute times drift.
 */
export async function interleave<K extends string, T>(
  rounds: number,
  cases: Record<K, (round: number) => Promise<T> | T>,
): Promise<Record<K, T[]>> {
  const names = Object.keys(cases) as K[];
  const samples = Object.fromEntries(names.map((name) => [name, [] as T[]])) as Record<K, T[]>;
  for (let round = 0; round < rounds; round++) {
    for (const name of names) samples[name].push(await cases[name](round));
  }
  return samples;
}
