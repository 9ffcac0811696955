import { FetchError } from "./errors.js";

/**
 * The adaptive pace of requests to one host, shared by crawls (their pace lives in their table)
 * and competitor checks (in process). Like Scrapy's AutoThrottle: the gap between two requests
 * moves halfway towards twice the host's last response time, so a site answering in milliseconds
 * is read quickly and a slow one is given room; never below the floor (the configured politeness
 * or the site's robots.txt Crawl-delay, whichever is larger) nor above a ceiling. A 429 or 503
 * pauses the host for its `Retry-After` (or the doubled gap) and doubles the gap; other server
 * errors double it too.
 */

/** Where a crawl's pace starts before it has seen the host answer. */
const START_GAP_MS = 1_000;
/** The slowest pace: one request every 30 s. */
export const MAX_GAP_MS = 30_000;
/** The longest pause a `Retry-After` is honoured for (SQS delays a message at most 15 minutes). */
export const MAX_PAUSE_MS = 900_000;
/** The gap aims at this many times the host's response time: it is busy with us a third of the time. */
const LATENCY_FACTOR = 2;

/** The gap before the host has answered: a gentle start, or the floor when that is longer. */
export const startGap = (floorMs: number) => Math.max(floorMs, START_GAP_MS);

/** What one request to a host showed. */
export type Observation = { latencyMs: number } | { error: unknown };

export interface PaceChange {
  gapMs: number;
  /** Epoch ms until which the host must not be asked again, when it asked for a pause. */
  pauseUntil?: number;
}

const clamp = (ms: number, floorMs: number) =>
  Math.round(Math.min(MAX_GAP_MS, Math.max(floorMs, ms)));

/** The host's next gap after a request, and a pause when it asked for one. */
export function nextPace(
  gapMs: number,
  observation: Observation,
  floorMs: number,
  now = Date.now(),
): PaceChange {
  if ("latencyMs" in observation) {
    return { gapMs: clamp((gapMs + LATENCY_FACTOR * observation.latencyMs) / 2, floorMs) };
  }
  const err = observation.error;
  if (!(err instanceof FetchError)) return { gapMs: clamp(gapMs, floorMs) };
  const slower = clamp(gapMs * 2, floorMs);
  if (err.code === "http_error" && (err.status === 429 || err.status === 503)) {
    const pause = Math.min(MAX_PAUSE_MS, err.retryAfterMs ?? slower);
    return { gapMs: slower, pauseUntil: now + pause };
  }
  const overloaded =
    err.code === "timeout" || (err.code === "http_error" && (err.status ?? 0) >= 500);
  return { gapMs: overloaded ? slower : clamp(gapMs, floorMs) };
}
