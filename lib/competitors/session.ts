import { type ContentKind, decodeText } from "../web/content-type.js";
import { FetchError } from "../web/errors.js";
import type { SafeFetcher } from "../web/fetch.js";
import type { Renderer, RenderMode } from "../web/render/renderer.js";
import { type FetchedPage, viewPage } from "../web/render/view.js";
import type { RobotsRules } from "../web/robots.js";
import { type HostPace, OverBudget, PoliteSession } from "../web/session.js";

/** What a request answers: the final URL (after redirects), the status and the body as text. */
export interface FetchedResource {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  /** The media type, lowercase, without parameters (`text/html`). */
  contentType: string;
  text: string;
}

/** What the caller will parse: a web page, a feed or sitemap, a job board's JSON. */
export type DocumentKind = "html" | "feed" | "json";

export interface SessionLimits {
  /** Requests allowed in the whole check, robots.txt files included. */
  maxFetches: number;
  /** Epoch milliseconds after which no request starts. */
  deadline: number;
  /** Least time between two requests to one host; a longer robots.txt Crawl-delay wins. */
  politenessMs: number;
  /** Longest single request. */
  requestTimeoutMs: number;
  /** The hosts' turns, shared with the other checks of the process. */
  pace: HostPace;
  /** When pages are rendered (the competitor's `render`), and what renders them. */
  render?: RenderMode | undefined;
  renderer?: Renderer | undefined;
  /** Keep a screenshot of each page rendered, as the check's evidence (screenshots.ts). */
  screenshots?: boolean;
}

/** An HTML page the check read: as the server sent it, and its screenshot when it was rendered. */
export interface ReadPage {
  page: FetchedPage;
  shot?: Buffer | undefined;
}

export type FetchOutcome =
  | { ok: true; page: FetchedResource }
  | {
      ok: false;
      /** `blocked`: a bot wall, captcha, block or login page stood where the page should be. */
      reason: "robots" | "budget" | "status" | "network" | "blocked";
      message: string;
    };

type Failure = Extract<FetchOutcome, { ok: false }>;

const KINDS: Record<DocumentKind, readonly ContentKind[]> = {
  html: ["html", "xhtml"],
  feed: ["xml"],
  json: ["json"],
};

/** Below this much time left a request is not worth starting. */
const MIN_REQUEST_MS = 250;

/** Why a request (or the robots.txt before it) came to nothing, as a check reports it. */
function failure(url: string, err: unknown): Failure {
  if (err instanceof OverBudget) return { ok: false, reason: "budget", message: err.message };
  if (err instanceof FetchError && err.code === "http_error") {
    return { ok: false, reason: "status", message: `${url} answered HTTP ${err.status}` };
  }
  if (err instanceof FetchError && err.code === "blocked") {
    return { ok: false, reason: "blocked", message: err.message };
  }
  return { ok: false, reason: "network", message: `${url}: ${(err as Error).message}` };
}

/**
 * One check's view of the web: the polite session of `lib/web` (robots.txt honoured, one request
 * at a time per host with a gap between them), read once per check, within a budget of requests
 * and time so an API-triggered check answers within the gateway's limit.
 */
export class CheckSession {
  private fetches = 0;
  private readonly web: PoliteSession;
  /** The HTML pages read, by the URL that answered: what the check's screenshots are taken of. */
  readonly pages = new Map<string, ReadPage>();

  constructor(
    fetcher: SafeFetcher,
    private readonly limits: SessionLimits,
  ) {
    this.web = new PoliteSession(fetcher, {
      politenessMs: limits.politenessMs,
      pace: limits.pace,
      budget: {
        spend: (url, waitMs) => {
          const left = limits.deadline - Date.now() - waitMs;
          if (this.fetches >= limits.maxFetches || left < MIN_REQUEST_MS) {
            throw new OverBudget(`the check's budget ran out before ${url}`);
          }
          this.fetches++;
          return Math.min(limits.requestTimeoutMs, left);
        },
      },
    });
  }

  /**
   * A GET, unless robots.txt disallows it or the budget is spent. Documented public APIs (the ATS
   * boards' JSON) pass `robots: false`: robots.txt governs crawling pages, not calling an API.
   */
  async get(
    url: string,
    kind: DocumentKind,
    options: { robots?: boolean } = {},
  ): Promise<FetchOutcome> {
    let rules: RobotsRules | undefined;
    if (options.robots !== false) {
      const robots = await this.robots(url);
      if ("ok" in robots) return robots;
      if (!robots.isAllowed(url)) {
        return { ok: false, reason: "robots", message: `robots.txt disallows ${url}` };
      }
      rules = robots;
    }
    try {
      const res = await this.web.fetch(url, { accept: KINDS[kind] }, rules);
      if (kind !== "html") {
        const text = decodeText(res.body, res.charset);
        return {
          ok: true,
          page: { url: res.url, status: res.status, contentType: res.mime, text },
        };
      }
      // A page as a browser shows it: walls refused, pages that need scripts rendered. Where no
      // browser is, such a page is read as sent: the readers take facts from its markup too (a
      // job board's embed, JSON-LD), and a section they find nothing for keeps its last state.
      const view = await viewPage(res, {
        mode: this.limits.render ?? "auto",
        renderer: this.limits.renderer,
        timeoutMs: Math.max(1, this.limits.deadline - Date.now()),
        ...(this.limits.screenshots ? { screenshot: true } : {}),
      }).catch((err: unknown) => {
        if (err instanceof FetchError && err.code === "needs_browser") return undefined;
        throw err;
      });
      const text = view
        ? typeof view.body === "string"
          ? view.body
          : decodeText(view.body, view.charset)
        : decodeText(res.body, res.charset);
      const page = { url: view?.url ?? res.url, status: res.status, contentType: res.mime, text };
      this.pages.set(page.url, { page: res, shot: view?.screenshot });
      return { ok: true, page };
    } catch (err) {
      return failure(url, err);
    }
  }

  /** Sitemaps that an origin's robots.txt names. */
  async sitemaps(origin: string): Promise<string[]> {
    const robots = await this.robots(origin);
    return "ok" in robots ? [] : robots.sitemaps;
  }

  /** The robots.txt rules of the URL's origin, or why the check may not read the site. */
  private async robots(url: string): Promise<RobotsRules | Failure> {
    const robotsUrl = `${new URL(url).origin}/robots.txt`;
    let rules: RobotsRules;
    try {
      rules = await this.web.rules(url);
    } catch (err) {
      return failure(robotsUrl, err);
    }
    const { unreadable } = rules;
    if (unreadable?.code === "http_error") {
      const message = `${robotsUrl} answered HTTP ${unreadable.status}, so the site is not read for now`;
      return { ok: false, reason: "robots", message };
    }
    return unreadable ? failure(robotsUrl, unreadable) : rules;
  }
}
