import { ApiError } from "./api.js";

/**
 * A screen's background polling, in one place: one loop whatever calls `start` and however often,
 * with at most one timer armed and one tick in flight. Ticks come once per `interval` while
 * something polled is pending, the tab is visible and the screen is on show; after a failed tick
 * the next waits the answer's `Retry-After` (a 429), or else twice the previous wait, up to
 * `maxWait`. Hiding the tab disarms it and showing it again resumes; leaving the screen lets its
 * timer lapse.
 */

/** What a poller polls: a panel's round of requests, and whether it still wants one. */
export interface Polled {
  /** One round of requests; a rejection counts as a failure (backoff). */
  tick(): Promise<void>;
  /** Whether anything is still worth polling for. */
  pending(): boolean;
}

export interface Poller {
  /** Polls, one interval (or the backoff left) from now, unless it already does. */
  start(): void;
  /**
   * What each tick polls, in this order. Given once the panels exist: they are made with the
   * poller, to start it when they have something pending.
   */
  poll(...polled: Polled[]): void;
}

export interface PollerOptions {
  /** The screen: nothing is polled while it is hidden or gone (another screen, signed out). */
  screen: HTMLElement;
  onError?: (err: unknown) => void;
  interval?: number;
  maxWait?: number;
}

export function poller({
  screen,
  onError,
  interval = 1500,
  maxWait = 60_000,
}: PollerOptions): Poller {
  let polled: Polled[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let wait = interval;
  /** No tick starts before this time (the last tick's end plus its wait). */
  let next = 0;

  const wanted = () =>
    document.visibilityState === "visible" &&
    screen.isConnected &&
    !screen.hidden &&
    polled.some((p) => p.pending());

  async function tick() {
    for (const p of polled) await p.tick();
  }

  /** Arms the timer, unless it is armed, a tick runs or nothing is wanted; re-arms after a tick. */
  function arm() {
    if (timer !== undefined || running || !wanted()) return;
    timer = setTimeout(
      async () => {
        timer = undefined;
        if (!wanted()) return;
        running = true;
        try {
          await tick();
          wait = interval;
        } catch (err) {
          const asked = err instanceof ApiError ? err.retryAfterMs : undefined;
          wait = asked ?? Math.min(wait * 2, maxWait);
          onError?.(err);
        }
        running = false;
        next = Date.now() + wait;
        arm();
      },
      Math.max(interval, next - Date.now()),
    );
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") return arm();
    clearTimeout(timer);
    timer = undefined;
  });
  return {
    start: arm,
    poll(...list) {
      polled = list;
    },
  };
}
