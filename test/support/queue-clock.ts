import { vi } from "vitest";
import type { LocalQueues } from "../../infra/local/queues.js";

/**
 * Runs `queues` until no message is left, moving the clock to each delayed message's time
 * instead of waiting for it: a test takes the time of its work, not of its delays (retries,
 * backoffs, a host's pause, a crawl's watch). The caller fakes Date alone, before the work
 * starts, with `vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true })`: timers stay
 * real, so the work between two delays runs as it would, and time only ever moves forward.
 */
export async function drainOnClock(queues: LocalQueues): Promise<void> {
  for (;;) {
    const next = await queues.settled();
    if (next === undefined) return;
    vi.setSystemTime(Math.max(next, Date.now()));
    queues.wake();
  }
}
