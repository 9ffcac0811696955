/**
 * Lets at most `limit` tasks run at once; the others wait their turn in arrival order. A finishing
 * task hands its slot straight to the next waiter, so a task arriving in between cannot jump in.
 */
export function limiter(limit: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}
