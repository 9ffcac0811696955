import * as robotsModule from "robots-parser";
import type { DocumentKind, FetchedResource, Fetcher } from "./fetcher.js";

export interface SessionLimits {
  /** Requests allowed in the whole check, robots.txt files included. */
  maxFetches: number;
  /** Epoch milliseconds after which no request starts. */
  deadline: number;
  /** Least time between two requests to one host; a longer robots.txt Crawl-delay wins. */
  politenessMs: number;
  /** Longest single request. */
  requestTimeoutMs: number;
  /** The product token robots.txt groups are matched against. */
  robotsAgent: string;
}

export type FetchOutcome =
  | { ok: true; page: FetchedResource }
  | { ok: false; reason: "robots" | "budget" | "status" | "network"; message: string };

interface Robots {
  isDisallowed(url: string, agent?: string): boolean | undefined;
  getCrawlDelay(agent?: string): number | undefined;
  getSitemaps(): string[];
}

/**
 * The package is CommonJS whose declaration file says `export default`: under NodeNext TypeScript
 * types the function one `.default` deeper than where Node (and esbuild) put it, hence the cast.
 */
const parseRobots = robotsModule.default as unknown as (url: string, text: string) => Robots;

type Failure = Extract<FetchOutcome, { ok: false }>;

/** What an origin's robots.txt lets the check do; `blocked` answers every request with `failure`. */
type RobotsPolicy =
  | { kind: "rules"; robot: Robots }
  | { kind: "allow" }
  | { kind: "blocked"; failure: Failure };

interface HostState {
  /** Settles when the request before ours is done: one request at a time per host. */
  tail: Promise<void>;
  /** When the last request to the host ended. */
  last: number;
  /** The host's robots.txt Crawl-delay, once read. */
  crawlDelayMs: number;
}

/** Below this much time left a request is not worth starting. */
const MIN_REQUEST_MS = 250;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One check's view of the web: every request goes through the fetcher with robots.txt honoured
 * (cached per origin), one request at a time per host with a gap between them, and a budget of
 * requests and time so an API-triggered check answers within the gateway's limit.
 */
export class CrawlSession {
  private fetches = 0;
  private readonly policies = new Map<string, Promise<RobotsPolicy>>();
  private readonly hosts = new Map<string, HostState>();

  constructor(
    private readonly fetcher: Fetcher,
    private readonly limits: SessionLimits,
  ) {}

  /**
   * A GET, unless robots.txt disallows it or the budget is spent. Documented public APIs (the ATS
   * boards' JSON) pass `robots: false`: robots.txt governs crawling pages, not calling an API.
   */
  async get(
    url: string,
    kind: DocumentKind,
    options: { robots?: boolean } = {},
  ): Promise<FetchOutcome> {
    if (options.robots !== false) {
      const policy = await this.policy(new URL(url).origin);
      if (policy.kind === "blocked") return policy.failure;
      if (policy.kind === "rules" && policy.robot.isDisallowed(url, this.limits.robotsAgent)) {
        return { ok: false, reason: "robots", message: `robots.txt disallows ${url}` };
      }
    }
    const outcome = await this.request(url, kind);
    if (outcome.ok && outcome.page.status >= 400) {
      return {
        ok: false,
        reason: "status",
        message: `${url} answered HTTP ${outcome.page.status}`,
      };
    }
    return outcome;
  }

  /** Sitemaps that an origin's robots.txt names. */
  async sitemaps(origin: string): Promise<string[]> {
    const policy = await this.policy(origin);
    return policy.kind === "rules" ? policy.robot.getSitemaps() : [];
  }

  /** RFC 9309: a 4xx robots.txt allows everything; a 5xx or no answer means stay away. */
  private policy(origin: string): Promise<RobotsPolicy> {
    let policy = this.policies.get(origin);
    if (!policy) {
      const robotsUrl = `${origin}/robots.txt`;
      policy = this.request(robotsUrl, "text").then((outcome): RobotsPolicy => {
        if (!outcome.ok) return { kind: "blocked", failure: outcome };
        const { status, text } = outcome.page;
        if (status >= 500) {
          const message = `${robotsUrl} answered HTTP ${status}, so the site is not read for now`;
          return { kind: "blocked", failure: { ok: false, reason: "robots", message } };
        }
        if (status >= 400) return { kind: "allow" };
        const robot = parseRobots(robotsUrl, text);
        const delay = robot.getCrawlDelay(this.limits.robotsAgent) ?? 0;
        this.host(new URL(origin).host).crawlDelayMs = delay * 1000;
        return { kind: "rules", robot };
      });
      this.policies.set(origin, policy);
    }
    return policy;
  }

  private host(name: string): HostState {
    let state = this.hosts.get(name);
    if (!state) {
      state = { tail: Promise.resolve(), last: 0, crawlDelayMs: 0 };
      this.hosts.set(name, state);
    }
    return state;
  }

  /** Waits for the host's turn, then fetches within what is left of the budget. */
  private async request(url: string, kind: DocumentKind): Promise<FetchOutcome> {
    const state = this.host(new URL(url).host);
    const turn = state.tail;
    let done = () => {};
    state.tail = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      await turn;
      const gap = Math.max(this.limits.politenessMs, state.crawlDelayMs);
      const wait = Math.max(0, state.last + gap - Date.now());
      const left = this.limits.deadline - Date.now() - wait;
      if (this.fetches >= this.limits.maxFetches || left < MIN_REQUEST_MS) {
        return { ok: false, reason: "budget", message: `the check's budget ran out before ${url}` };
      }
      this.fetches++;
      if (wait > 0) await sleep(wait);
      try {
        const page = await this.fetcher(url, {
          kind,
          timeoutMs: Math.min(this.limits.requestTimeoutMs, left),
        });
        return { ok: true, page };
      } catch (err) {
        return { ok: false, reason: "network", message: `${url}: ${(err as Error).message}` };
      } finally {
        state.last = Date.now();
      }
    } finally {
      done();
    }
  }
}
