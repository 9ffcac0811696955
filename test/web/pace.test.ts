import { describe, expect, it, vi } from "vitest";
import { FetchError } from "../../lib/web/errors.js";
import { MAX_GAP_MS, MAX_PAUSE_MS, nextPace, startGap } from "../../lib/web/pace.js";
import { HostPace } from "../../lib/web/session.js";

/** The adaptive pace of requests to one host (issue 17). */
describe("nextPace", () => {
  const busy = (status: number, retryAfterMs?: number) =>
    new FetchError("http_error", `HTTP ${status}`, status, retryAfterMs);

  it("moves halfway towards twice the response time, within the floor and the ceiling", () => {
    expect(startGap(100)).toBe(1_000);
    expect(startGap(5_000)).toBe(5_000);
    expect(nextPace(1_000, { latencyMs: 10 }, 100).gapMs).toBe(510);
    expect(nextPace(120, { latencyMs: 10 }, 100).gapMs).toBe(100);
    expect(nextPace(1_000, { latencyMs: 3_000 }, 100).gapMs).toBe(3_500);
    expect(nextPace(20_000, { latencyMs: 60_000 }, 100).gapMs).toBe(MAX_GAP_MS);
    // Never faster than a Crawl-delay the floor carries.
    expect(nextPace(2_000, { latencyMs: 1 }, 2_000).gapMs).toBe(2_000);
  });

  it("pauses on 429 and 503 for Retry-After (bounded), and slows down on server errors", () => {
    const now = 1_000_000;
    expect(nextPace(200, { error: busy(429, 5_000) }, 100, now)).toEqual({
      gapMs: 400,
      pauseUntil: now + 5_000,
    });
    expect(nextPace(200, { error: busy(503) }, 100, now)).toEqual({
      gapMs: 400,
      pauseUntil: now + 400,
    });
    expect(nextPace(200, { error: busy(429, 10 * MAX_PAUSE_MS) }, 100, now).pauseUntil).toBe(
      now + MAX_PAUSE_MS,
    );
    expect(nextPace(200, { error: busy(500) }, 100, now)).toEqual({ gapMs: 400 });
    expect(nextPace(200, { error: new FetchError("timeout", "slow") }, 100, now)).toEqual({
      gapMs: 400,
    });
    // A page that is missing says nothing about the host's load.
    expect(nextPace(200, { error: busy(404) }, 100, now)).toEqual({ gapMs: 200 });
  });
});

describe("HostPace", () => {
  it("holds a host's next request for the pause a 429 asked for", async () => {
    // The pace's clock stands still (Date only: its sleep is a real timer): the pause owed is the
    // whole 300 ms however long this machine takes between the two requests.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    try {
      const pace = new HostPace();
      const refuse = () => Promise.reject(busy429());
      await expect(pace.turn("h.example", 0, () => 0, refuse)).rejects.toThrow("HTTP 429");
      const asked = performance.now();
      let waited = -1;
      let sent = -1;
      await pace.turn(
        "h.example",
        0,
        (waitMs) => {
          waited = waitMs;
        },
        async () => {
          sent = performance.now();
        },
      );
      expect(waited).toBe(300);
      // Timers may fire a millisecond early against the clock they are measured with.
      expect(sent - asked).toBeGreaterThanOrEqual(300 - 2);
    } finally {
      vi.useRealTimers();
    }
  });
});

const busy429 = () => new FetchError("http_error", "HTTP 429", 429, 300);
