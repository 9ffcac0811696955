import { existsSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { createRequire } from "node:module";
import type { Browser, BrowserContext, Page, Request, Route } from "playwright-core";
import { limiter } from "../../async.js";
import { logger } from "../../log.js";
import { FetchError } from "../errors.js";
import { DEFAULT_USER_AGENT, type Relayed, type SafeFetcher } from "../fetch.js";
import { CONSENT_SELECTORS, removeConsentOverlays } from "./consent.js";
import type { RenderedPage, Renderer, RenderRequest } from "./renderer.js";

/**
 * Pages rendered in a headless Chromium, one browser per process, launched on the first page that
 * needs it and reused; a browser that disconnects or cannot close a page in time is replaced.
 *
 * The browser itself reaches nothing. Every request a page makes (the document, its redirects,
 * scripts, the JSON a script fetches, frames) is intercepted and made by the service's
 * `SafeFetcher.relay`, so it meets the same URL and address checks as any fetch, the address
 * checked being the address connected to (no DNS rebinding); the answer is handed back to the
 * page. Whatever interception cannot see is sent to a proxy that does not exist (a dead end) and
 * WebSockets are closed. Downloads, popups, permission prompts, dialogs and service workers are
 * refused. Each page is bounded in time, requests, bytes and script heap, and ends with a clear
 * `FetchError` when it passes a bound; the next page gets a fresh context.
 *
 * playwright-core is required at run time, as jsdom is (readable.ts), so bundles that never render
 * leave it out.
 */

export interface RenderLimits {
  /** The whole render: navigation, settling, capture. */
  timeoutMs: number;
  /** Longest wait for the network to go quiet after the document loaded; then the DOM is taken as it is. */
  settleMs: number;
  /** No request in flight for this long is a quiet network. */
  idleMs: number;
  /** Requests one page may make, the document included. */
  maxRequests: number;
  /** Bytes of every answer one page receives, decoded. */
  maxBytes: number;
  /** V8 heap of a page's scripts, in MB: a page past it crashes alone. */
  maxHeapMb: number;
  /** Longest wait for a page's context to close; past it the browser is replaced. */
  closeMs: number;
}

export const DEFAULT_RENDER_LIMITS: RenderLimits = {
  timeoutMs: 20_000,
  settleMs: 5_000,
  idleMs: 500,
  maxRequests: 150,
  maxBytes: 15 * 1024 * 1024,
  maxHeapMb: 256,
  closeMs: 5_000,
};

export interface BrowserRendererOptions {
  fetcher: SafeFetcher;
  /** The Chromium binary (Debian's `/usr/bin/chromium`; on Lambda, @sparticuz/chromium's). */
  executablePath: string;
  /** Extra command-line switches (a Lambda build's own). */
  args?: readonly string[];
  limits?: Partial<RenderLimits>;
  /** Pages rendered at once. */
  concurrency?: number;
  userAgent?: string;
}

/**
 * The switches every Chromium of the service runs with, apart from the network's (the renderer
 * adds a dead-end proxy behind its relay): the bench's bare Playwright floor launches with them.
 */
export const CHROMIUM_SWITCHES = [
  // Containers and Lambda give no user namespaces to sandbox renderers in; the page's requests
  // all go through the relay, and nothing else leaves the browser.
  "--no-sandbox",
  "--deny-permission-prompts",
  "--disable-dev-shm-usage",
  "--disable-gpu",
  "--mute-audio",
] as const;

/** Requests a page is never given: they only cost time and bytes and change no text. */
const SKIPPED_TYPES = new Set(["media", "font", "manifest", "texttrack", "eventsource", "ping"]);

/** Request headers the relay sets itself, or that would carry the browser's state out. */
const DROPPED_REQUEST_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "accept-encoding",
  "user-agent",
  "cookie",
  "te",
  "upgrade",
  "proxy-authorization",
  "proxy-connection",
]);

/** Answer headers that describe the wire (the relay decodes the body) or would keep state. */
const DROPPED_RESPONSE_HEADERS = new Set([
  "content-encoding",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "set-cookie",
  "strict-transport-security",
  "alt-svc",
]);

/** A screenshot is cut to this height and must fit in this many bytes (JPEG). */
const SHOT_MAX_HEIGHT = 3000;
export const SHOT_MAX_BYTES = 600 * 1024;
const SHOT_QUALITIES = [60, 35];
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** As the safe fetcher's own bound on redirects. */
const MAX_REDIRECTS = 5;
const VIEWPORT = { width: 1280, height: 800 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function requestHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).filter(([name]) => !DROPPED_REQUEST_HEADERS.has(name.toLowerCase())),
  );
}

function responseHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROPPED_RESPONSE_HEADERS.has(name)) continue;
    kept[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return kept;
}

/** One page's render: what it spent, what is in flight, and the first bound it passed. */
class PageState {
  requests = 0;
  bytes = 0;
  inflight = 0;
  lastChange = Date.now();
  documentServed = false;
  page: Page | undefined;
  error: FetchError | undefined;
  private rejectFailure: (err: FetchError) => void = () => undefined;
  /** Rejects with the page's failure, the moment it happens. */
  readonly failure = new Promise<never>((_, reject) => {
    this.rejectFailure = reject;
  });

  constructor(readonly deadline: number) {
    this.failure.catch(() => undefined);
  }

  fail(err: FetchError): void {
    if (this.error) return;
    this.error = err;
    this.rejectFailure(err);
  }

  begin(): void {
    this.inflight++;
    this.lastChange = Date.now();
  }

  end(): void {
    this.inflight--;
    this.lastChange = Date.now();
  }

  /** Resolves once no request was in flight for `idleMs`, or at `until`. */
  async settled(idleMs: number, until: number): Promise<void> {
    while (Date.now() < until) {
      if (this.inflight === 0 && Date.now() - this.lastChange >= idleMs) return;
      await sleep(Math.min(50, idleMs));
    }
  }
}

/** Whether a request loads the page's own document (a popup's has no frame yet: it is not). */
function isMainDocument(req: Request, page: Page | undefined): boolean {
  if (!req.isNavigationRequest()) return false;
  try {
    return req.frame() === page?.mainFrame();
  } catch {
    return false;
  }
}

const abort = (route: Route) => route.abort("blockedbyclient").catch(() => undefined);

/** The first line of a Playwright error, which goes on with its call log. */
const firstLine = (err: unknown) => String((err as Error)?.message ?? err).split("\n", 1)[0];

export class BrowserRenderer implements Renderer {
  private browser: Promise<Browser> | undefined;
  private readonly limits: RenderLimits;
  private readonly turn: ReturnType<typeof limiter>;
  /** Browsers launched by this renderer: the first, then one per restart. */
  launches = 0;

  constructor(private readonly options: BrowserRendererOptions) {
    this.limits = { ...DEFAULT_RENDER_LIMITS, ...options.limits };
    this.turn = limiter(options.concurrency ?? 2);
  }

  /** Whether a browser can run here at all. */
  get available(): boolean {
    return existsSync(this.options.executablePath);
  }

  render(request: RenderRequest): Promise<RenderedPage> {
    return this.turn(() => this.renderPage(request));
  }

  async close(): Promise<void> {
    const browser = this.browser;
    this.browser = undefined;
    await browser?.then((b) => b.close()).catch(() => undefined);
  }

  private launch(): Promise<Browser> {
    if (this.browser) return this.browser;
    if (!this.available) {
      throw new FetchError(
        "needs_browser",
        `No browser is installed here (${this.options.executablePath}) to render pages that need scripts`,
      );
    }
    const { chromium } = createRequire(import.meta.url)(
      "playwright-core",
    ) as typeof import("playwright-core");
    const launching = chromium.launch({
      executablePath: this.options.executablePath,
      args: [
        ...(this.options.args ?? []),
        ...CHROMIUM_SWITCHES,
        `--js-flags=--max-old-space-size=${this.limits.maxHeapMb}`,
        // A dead-end proxy for anything interception does not see (prefetches, WebRTC over TCP).
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
      ],
    });
    this.launches++;
    this.browser = launching;
    const forget = () => {
      if (this.browser === launching) this.browser = undefined;
    };
    launching.then((browser) => browser.on("disconnected", forget), forget);
    return launching;
  }

  /** Replaces an unhealthy browser: the next page launches a fresh one. */
  private async restart(why: string): Promise<void> {
    logger.warn("restarting the page browser", { why });
    const browser = this.browser;
    this.browser = undefined;
    const closed = browser?.then((b) => b.close()).catch(() => undefined);
    await Promise.race([closed, sleep(this.limits.closeMs)]);
  }

  private async renderPage(request: RenderRequest): Promise<RenderedPage> {
    const timeoutMs = Math.min(request.timeoutMs ?? this.limits.timeoutMs, this.limits.timeoutMs);
    const state = new PageState(Date.now() + timeoutMs);
    let context: BrowserContext | undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = () =>
      new FetchError(
        "render_timeout",
        `${request.url} did not finish rendering within ${Math.round(timeoutMs / 1000)} seconds`,
      );
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timeout()), timeoutMs);
    });
    timedOut.catch(() => undefined);
    const work = (async () => {
      const browser = await this.launch();
      context = await browser.newContext({
        acceptDownloads: false,
        serviceWorkers: "block",
        permissions: [],
        viewport: VIEWPORT,
        userAgent: this.options.userAgent ?? DEFAULT_USER_AGENT,
      });
      return this.capture(context, request, state);
    })();
    work.catch(() => undefined);
    try {
      return await Promise.race([work, state.failure, timedOut]);
    } catch (err) {
      if (state.error) throw state.error;
      if (err instanceof FetchError) throw err;
      // The browser's own waits (Playwright's TimeoutError) end at the same deadline, and may end
      // first: a timeout either way.
      if ((err instanceof Error && err.name === "TimeoutError") || Date.now() >= state.deadline) {
        throw timeout();
      }
      throw new FetchError(
        "render_failed",
        `${request.url} could not be rendered: ${firstLine(err)}`,
      );
    } finally {
      clearTimeout(timer);
      // Later requests of this page are refused while it closes.
      state.fail(new FetchError("render_failed", "The page was closed"));
      if (context) await this.dispose(context);
      // Still launching or opening the context: it is closed once it exists.
      else work.finally(() => context?.close()).catch(() => undefined);
    }
  }

  private async capture(
    context: BrowserContext,
    request: RenderRequest,
    state: PageState,
  ): Promise<RenderedPage> {
    await context.routeWebSocket(/.*/, (ws) => ws.close({ code: 1008, reason: "Not allowed" }));
    await context.route("**/*", (route, req) => this.relay(route, req, state, request));
    const page = await context.newPage();
    state.page = page;
    // Popups and new windows are closed as they open; dialogs dismissed.
    context.on("page", (other) => {
      if (other !== page) other.close().catch(() => undefined);
    });
    page.on("dialog", (dialog) => dialog.dismiss().catch(() => undefined));
    page.on("crash", () =>
      state.fail(
        new FetchError(
          "render_failed",
          `${request.url} crashed its renderer (more than ${this.limits.maxHeapMb} MB of script memory?)`,
        ),
      ),
    );
    const left = () => Math.max(1, state.deadline - Date.now());
    await page.goto(request.url, { waitUntil: "domcontentloaded", timeout: left() });
    await state.settled(
      this.limits.idleMs,
      Math.min(state.deadline, Date.now() + this.limits.settleMs),
    );
    await page.evaluate(
      `(${removeConsentOverlays.toString()})(document, ${JSON.stringify(CONSENT_SELECTORS)})`,
    );
    const html = await page.content();
    const rendered: RenderedPage = { url: page.url(), html };
    if (request.screenshot) rendered.screenshot = await this.screenshot(page, left());
    return rendered;
  }

  /** A JPEG of the top of the page, at most SHOT_MAX_HEIGHT tall and SHOT_MAX_BYTES large. */
  private async screenshot(page: Page, timeout: number): Promise<Buffer | undefined> {
    const height = await page.evaluate("document.documentElement.scrollHeight");
    const clip = {
      x: 0,
      y: 0,
      width: VIEWPORT.width,
      height: Math.max(1, Math.min(Number(height) || VIEWPORT.height, SHOT_MAX_HEIGHT)),
    };
    for (const quality of SHOT_QUALITIES) {
      const shot = await page.screenshot({ type: "jpeg", quality, fullPage: true, clip, timeout });
      if (shot.byteLength <= SHOT_MAX_BYTES) return shot;
    }
    const viewport = await page.screenshot({ type: "jpeg", quality: 35, timeout });
    return viewport.byteLength <= SHOT_MAX_BYTES ? viewport : undefined;
  }

  /** Makes one of the page's requests through the safe fetcher, within the page's bounds. */
  private async relay(route: Route, req: Request, state: PageState, request: RenderRequest) {
    if (state.error) return abort(route);
    const type = req.resourceType();
    if (SKIPPED_TYPES.has(type) || (type === "image" && !request.screenshot)) return abort(route);
    const main = isMainDocument(req, state.page);
    state.requests++;
    if (state.requests > this.limits.maxRequests) {
      state.fail(
        new FetchError(
          "too_many_requests",
          `${request.url} made more than ${this.limits.maxRequests} requests while rendering`,
        ),
      );
      return abort(route);
    }
    const { document } = request;
    if (main && document && !state.documentServed && req.url() === request.url) {
      // The page as it was just fetched: the site is not asked for it twice.
      state.documentServed = true;
      state.bytes += document.body.byteLength;
      return route
        .fulfill({ status: 200, contentType: document.contentType, body: document.body })
        .catch(() => undefined);
    }
    state.begin();
    try {
      const res = await this.follow(req, state);
      await route.fulfill({
        status: res.status,
        headers: responseHeaders(res.headers),
        body: res.body,
      });
    } catch (err) {
      if (err instanceof FetchError && (main || err.code === "too_large")) {
        state.fail(
          err.code === "too_large"
            ? new FetchError(
                "too_large",
                `${request.url} loaded more than ${this.limits.maxBytes} bytes while rendering`,
              )
            : err,
        );
      }
      await abort(route);
    } finally {
      state.end();
    }
  }

  /**
   * Relays a request, following its redirects here, each hop checked again: Chromium does not
   * hand the request after a fulfilled redirect back to interception, so a redirect is never
   * given to the browser to follow (it would meet the dead-end proxy). A page whose document
   * redirected keeps its first URL; its fetch before rendering has followed those redirects
   * already, so the browser is sent to where they end.
   */
  private async follow(req: Request, state: PageState): Promise<Relayed> {
    let url = req.url();
    let method = req.method();
    let body = req.postDataBuffer() ?? undefined;
    for (let hop = 0; ; hop++) {
      const res = await this.options.fetcher.relay(
        url,
        { method, headers: requestHeaders(req.headers()), body },
        {
          timeoutMs: Math.max(1, state.deadline - Date.now()),
          maxBytes: Math.max(0, this.limits.maxBytes - state.bytes),
        },
      );
      state.bytes += res.body.byteLength;
      const location = res.headers.location;
      if (!REDIRECT_STATUSES.has(res.status) || !location) return res;
      if (hop >= MAX_REDIRECTS) {
        throw new FetchError(
          "too_many_redirects",
          `${req.url()} redirected more than ${MAX_REDIRECTS} times`,
        );
      }
      if (!URL.canParse(location, url)) {
        throw new FetchError("invalid_url", `${url} redirected to an invalid URL`);
      }
      url = new URL(location, url).href;
      // As browsers do: 303, and 301 or 302 after a POST, continue as a GET without the body.
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
    }
  }

  /** Closes a page's context; one that does not close in time means the browser is unwell. */
  private async dispose(context: BrowserContext | undefined): Promise<void> {
    if (!context) return;
    const closed = context.close().then(
      () => true,
      () => false,
    );
    const done = await Promise.race([closed, sleep(this.limits.closeMs).then(() => false)]);
    if (!done) await this.restart("a page's context did not close in time");
  }
}
