/** Maps over items with at most `limit` calls in flight, keeping order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** How long a task may wait for its turn, and what it fails with when that is over. */
export interface MaxWait {
  ms: number;
  busy: () => Error;
}

/**
 * Lets at most `limit` tasks run at once; the others wait their turn in arrival order. A finishing
 * task hands its slot straight to the next waiter, so a task arriving in between cannot jump in.
 * A task given a `maxWait` leaves the line when it has waited that long, rejecting with `busy()`.
 */
export function limiter(limit: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  const turn = (maxWait: MaxWait | undefined) =>
    new Promise<void>((resolve, reject) => {
      const start = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer =
        maxWait &&
        setTimeout(() => {
          waiting.splice(waiting.indexOf(start), 1);
          reject(maxWait.busy());
        }, maxWait.ms);
      waiting.push(start);
    });
  return async <T>(task: () => Promise<T>, maxWait?: MaxWait): Promise<T> => {
    if (running < limit) running++;
    else await turn(maxWait);
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** `work`, or a rejection (`no answer within {ms} ms`) once `ms` have passed without its answer. */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
