import { ApiError } from "./api.js";

/**
 * A screen's background polling, in one place: one loop whatever calls `start` and however often,
 * with at most one timer armed and one tick in flight. Ticks come once per `interval` while
 * `pending()` holds, the tab is visible and the screen is on show; after a failed tick the next
 * waits the answer's `Retry-After` (a 429), or else twice the previous wait, up to `maxWait`.
 * Hiding the tab disarms it and showing it again resumes; leaving the screen lets its timer lapse.
 */
export interface Poller {
  /** Polls, one interval (or the backoff left) from now, unless it already does. */
  start(): void;
}

export interface PollerOptions {
  /** One round of requests; a rejection counts as a failure (backoff). */
  tick: () => Promise<void>;
  /** Whether anything is still worth polling for. */
  pending: () => boolean;
  /** The screen: nothing is polled while it is hidden or gone (another screen, signed out). */
  screen: HTMLElement;
  onError?: (err: unknown) => void;
  interval?: number;
  maxWait?: number;
}

export function poller({
  tick,
  pending,
  screen,
  onError,
  interval = 1500,
  maxWait = 60_000,
}: PollerOptions): Poller {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let wait = interval;
  /** No tick starts before this time (the last tick's end plus its wait). */
  let next = 0;

  const wanted = () =>
    document.visibilityState === "visible" && screen.isConnected && !screen.hidden && pending();

  function arm() {
    if (timer !== undefined || running || !wanted()) return;
    timer = setTimeout(run, Math.max(interval, next - Date.now()));
  }

  async function run() {
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
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") return arm();
    clearTimeout(timer);
    timer = undefined;
  });
  return { start: arm };
}
