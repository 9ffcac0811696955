import { LRUCache } from "lru-cache";
import { limiter } from "../async.js";
import { neverSent } from "./errors.js";
import type { FetchedContent, FetchOptions, SafeFetcher } from "./fetch.js";
import { nextPace, type Observation } from "./pace.js";
import { RobotsCache, type RobotsOptions, type RobotsRules } from "./robots.js";

/**
 * The polite way to a site, for crawls and competitor checks alike: robots.txt read once per
 * origin under the one policy (`RobotsCache`), and one request at a time per host, each a gap
 * after the last one ended: at least the larger of the configured politeness and the host's
 * Crawl-delay, more when the host answers slowly or asks for a pause (`pace.ts`).
 * A crawl spreads over many invocations, so it spaces its pages by slots kept in its table
 * (`HostPace.claimSlot`), of the gap this session gives.
 */

/** Why a session sent no request: its budget (requests or time) is spent. */
export class OverBudget extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OverBudget";
  }
}

/** What a session may still spend, asked in each request's turn before it waits. */
export interface Budget {
  /**
   * The longest the request to `url` may take once it has waited `waitMs`; throws `OverBudget`
   * when it may not be sent.
   */
  spend(url: string, waitMs: number): number;
}

interface Host {
  /** Runs the host's requests one at a time, in arrival order. */
  run: ReturnType<typeof limiter>;
  /** When the host's last request ended. */
  last: number;
  /** The gap its response times call for (`nextPace`), and a pause it asked for. */
  gapMs: number;
  pauseUntil: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The hosts' turns in one process: one request at a time per host, each at least `gapMs` after
 * the last one that reached the host ended, longer while the host answers slowly, and none during
 * a pause a 429 or 503 asked for. Sessions that share one share each host's pace.
 */
export class HostPace {
  private readonly hosts: LRUCache<string, Host>;

  constructor(maxHosts = 10_000) {
    this.hosts = new LRUCache({ max: maxHosts });
  }

  /**
   * Runs `request` in the host's turn, once the gap has passed. `admit` is asked first with the
   * wait still owed, and its answer goes to `request`; when it throws, nothing is sent and the
   * host's pace is as it was.
   */
  turn<A, T>(
    name: string,
    gapMs: number,
    admit: (waitMs: number) => A,
    request: (admitted: A) => Promise<T>,
  ): Promise<T> {
    let host = this.hosts.get(name);
    if (!host) {
      host = { run: limiter(1), last: 0, gapMs, pauseUntil: 0 };
      this.hosts.set(name, host);
    }
    const state = host;
    const observe = (observation: Observation) => {
      state.last = Date.now();
      const pace = nextPace(state.gapMs, observation, gapMs, state.last);
      state.gapMs = pace.gapMs;
      state.pauseUntil = Math.max(state.pauseUntil, pace.pauseUntil ?? 0);
    };
    return state.run(async () => {
      const now = Date.now();
      const gap = Math.max(gapMs, state.gapMs);
      const waitMs = Math.max(0, state.last + gap - now, state.pauseUntil - now);
      const admitted = admit(waitMs);
      if (waitMs > 0) await sleep(waitMs);
      const started = Date.now();
      try {
        const result = await request(admitted);
        observe({ latencyMs: Date.now() - started });
        return result;
      } catch (err) {
        // Refused before it connected, the request never reached the host: it owes no pause.
        if (!neverSent(err)) observe({ error: err });
        throw err;
      }
    });
  }
}

export interface SessionOptions {
  /** Least time between two requests to one host; a longer robots.txt Crawl-delay wins. */
  politenessMs: number;
  /** The hosts' turns: the session's own, unless it shares them with other sessions. */
  pace?: HostPace;
  /** What the session may spend; no bound by default. */
  budget?: Budget;
  /** How long, and for how many origins, robots.txt rules are kept. */
  robots?: RobotsOptions;
}

export class PoliteSession {
  private readonly robots: RobotsCache;
  private readonly pace: HostPace;

  constructor(
    private readonly fetcher: SafeFetcher,
    private readonly options: SessionOptions,
  ) {
    this.pace = options.pace ?? new HostPace();
    this.robots = new RobotsCache((url, fetch) => this.fetch(url, fetch), options.robots);
  }

  /** The robots.txt rules of a URL's origin; the file is fetched in the host's turn. */
  rules(url: string | URL): Promise<RobotsRules> {
    return this.robots.rules(url);
  }

  /** The least time between two requests to a host whose robots.txt says `rules`. */
  gapMs(rules?: RobotsRules): number {
    return Math.max(this.options.politenessMs, rules?.crawlDelayMs ?? 0);
  }

  /**
   * A GET in the host's turn, `gapMs(rules)` after its last request ended. Whether robots.txt
   * allows it is the caller's to ask (`rules`); a public API's host has no rules to pass. Throws
   * `OverBudget` when the budget refuses it, else as `SafeFetcher.fetch` does.
   */
  fetch(url: string, options: FetchOptions = {}, rules?: RobotsRules): Promise<FetchedContent> {
    return this.pace.turn(
      new URL(url).host,
      this.gapMs(rules),
      (waitMs) => this.options.budget?.spend(url, waitMs) ?? options.timeoutMs,
      (timeoutMs) => this.fetcher.fetch(url, { ...options, timeoutMs }),
    );
  }
}
