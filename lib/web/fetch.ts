import { lookup as dnsLookup } from "node:dns/promises";
import http, { type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { type Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import zlib from "node:zlib";
import { blockedRange } from "./address.js";
import {
  ALL_KINDS,
  acceptHeader,
  type ContentKind,
  contentKind,
  decodeText,
  parseContentType,
} from "./content-type.js";
import { FetchError, parseRetryAfter } from "./errors.js";
import { blockedBy, WALL_STATUSES } from "./render/detect.js";
import { profilePage } from "./render/profile.js";
import { checkUrl, privateAllowed, type UrlPolicy } from "./url.js";

/**
 * The one way the service reaches the web. Each hop is checked statically (`checkUrl`), then every
 * address its host resolves to is checked inside the connection's own `lookup`, so the address
 * that is checked is the address that is connected to (no gap for DNS rebinding). Redirects are
 * followed by hand and each hop is checked again; one deadline covers the whole exchange, and the
 * body is counted after decompression so a small gzip bomb cannot grow past the cap.
 */

export const DEFAULT_USER_AGENT = "kb-intel-bot/1.0 (+https://github.com/kb-intel)";

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Host name to addresses (A and AAAA); tests inject one to make any name resolve anywhere. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export interface FetchPolicy extends UrlPolicy {
  userAgent?: string;
  /** Deadline for the whole exchange, redirects and body included. */
  timeoutMs?: number;
  /** Largest body, counted after decompression. */
  maxBytes?: number;
  maxRedirects?: number;
  /** Most `Content-Encoding` layers accepted (gzip on gzip is legal, gzip on gzip on... is a bomb). */
  maxEncodings?: number;
  resolve?: Resolver;
}

export interface FetchOptions {
  /** Content kinds this caller can use; others fail with `unsupported_content_type`. */
  accept?: readonly ContentKind[];
  maxBytes?: number;
  timeoutMs?: number;
}

/** A conditional request: what the caller has from an earlier fetch, sent as `If-None-Match` / `If-Modified-Since`. */
export interface ConditionalOptions extends FetchOptions {
  validators: Validators;
}

/** A response's cache validators, for a later conditional request. */
export interface Validators {
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/** A conditional request's answer when the content has not changed since (HTTP 304). */
export interface NotModified {
  type: "not_modified";
  url: string;
  status: 304;
}

export interface FetchedContent {
  type: "content";
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  kind: ContentKind;
  mime: string;
  charset: string | undefined;
  body: Buffer;
  /** The URLs that redirected, in order. */
  redirects: string[];
  /** `ETag` and `Last-Modified`, for a later conditional request. */
  validators: Validators;
}

export interface FetchedRedirect {
  type: "redirect";
  url: string;
  status: number;
  /** The absolute target, not yet checked: the caller decides whether to go there. */
  location: string;
}

export type FetchResult = FetchedContent | FetchedRedirect;

/** A request relayed for a browser (`SafeFetcher.relay`): the answer as the site gave it, decoded. */
export interface Relayed {
  url: string;
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const DECODERS: Record<string, () => Transform> = {
  gzip: () => zlib.createGunzip(),
  "x-gzip": () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

const DEFAULTS = {
  userAgent: DEFAULT_USER_AGENT,
  timeoutMs: 20_000,
  maxBytes: 5 * 1024 * 1024,
  maxRedirects: 5,
  maxEncodings: 2,
};

export class SafeFetcher {
  private readonly policy: Required<Omit<FetchPolicy, "trustedHosts">> & UrlPolicy;

  constructor(policy: FetchPolicy) {
    this.policy = { ...DEFAULTS, resolve: systemResolver, ...policy };
  }

  /** Checks a URL statically under this fetcher's policy (see `checkUrl`). */
  check(input: string | URL): URL {
    return checkUrl(input, this.policy);
  }

  /**
   * Fetches a URL, following up to `maxRedirects` redirects. With `validators` the request is
   * conditional and an unchanged page answers `NotModified`.
   */
  fetch(input: string | URL, options?: FetchOptions): Promise<FetchedContent>;
  fetch(input: string | URL, options: ConditionalOptions): Promise<FetchedContent | NotModified>;
  async fetch(input: string | URL, options: FetchOptions | ConditionalOptions = {}) {
    const signal = AbortSignal.timeout(options.timeoutMs ?? this.policy.timeoutMs);
    const redirects: string[] = [];
    let url = this.check(input);
    for (;;) {
      const result = await this.hop(url, options, signal);
      if (result.type === "content") return { ...result, redirects };
      if (result.type === "not_modified") return result;
      if (redirects.length >= this.policy.maxRedirects) {
        throw new FetchError(
          "too_many_redirects",
          `${redirects[0] ?? url.href} redirected more than ${this.policy.maxRedirects} times`,
        );
      }
      redirects.push(url.href);
      url = this.check(result.location);
    }
  }

  /** Fetches a URL once: a redirect is answered, not followed (crawls record it as a link). */
  async fetchOnce(input: string | URL, options: FetchOptions = {}): Promise<FetchResult> {
    const signal = AbortSignal.timeout(options.timeoutMs ?? this.policy.timeoutMs);
    const result = await this.hop(this.check(input), options, signal);
    if (result.type === "not_modified") throw new Error("A request without validators got a 304");
    return result.type === "content" ? { ...result, redirects: [] } : result;
  }

  /**
   * POSTs a body to a URL once, under the same checks as every fetch; a redirect is not followed.
   * Answers the status whatever it is, with the start of the body (webhook deliveries).
   */
  async post(
    input: string | URL,
    request: { headers: Record<string, string>; body: string },
    options: { timeoutMs?: number; maxBytes?: number } = {},
  ): Promise<{ status: number; body: string }> {
    const signal = AbortSignal.timeout(options.timeoutMs ?? this.policy.timeoutMs);
    const url = this.check(input);
    const res = await this.open(url, { method: "POST", ...request }, signal);
    try {
      const body = await readStart(res, options.maxBytes ?? 4096);
      return { status: res.statusCode ?? 0, body: body.toString("utf8") };
    } catch (err) {
      throw toFetchError(err, url, signal);
    }
  }

  private async hop(
    url: URL,
    options: FetchOptions & Partial<ConditionalOptions>,
    signal: AbortSignal,
  ): Promise<FetchedRedirect | NotModified | Omit<FetchedContent, "redirects">> {
    const accept = options.accept ?? ALL_KINDS;
    const maxBytes = options.maxBytes ?? this.policy.maxBytes;
    const res = await this.open(
      url,
      {
        method: "GET",
        headers: {
          accept: acceptHeader(accept),
          "accept-encoding": "gzip, deflate, br",
          ...(options.validators?.etag ? { "if-none-match": options.validators.etag } : {}),
          ...(options.validators?.lastModified
            ? { "if-modified-since": options.validators.lastModified }
            : {}),
        },
      },
      signal,
    );
    try {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECT_STATUSES.has(status) && location) {
        res.destroy();
        return { type: "redirect", url: url.href, status, location: absolute(location, url) };
      }
      if (status === 304 && options.validators) {
        res.destroy();
        return { type: "not_modified", url: url.href, status };
      }
      if (status < 200 || status >= 300) {
        if (WALL_STATUSES.has(status) && accept.includes("html")) {
          await refuseWall(res, url, this.policy.maxEncodings, signal);
        }
        const retryAfter = parseRetryAfter(res.headers["retry-after"]);
        throw new FetchError(
          "http_error",
          `${url.href} answered HTTP ${status}`,
          status,
          retryAfter,
        );
      }
      const { mime, charset } = parseContentType(res.headers["content-type"]);
      const kind = contentKind(mime);
      if (!kind || !accept.includes(kind)) {
        throw new FetchError(
          "unsupported_content_type",
          `${url.href} is ${mime || "of no declared type"}, which is not accepted here`,
        );
      }
      const body = await readBody(res, url, maxBytes, this.policy.maxEncodings, signal);
      return {
        type: "content",
        url: url.href,
        status,
        kind,
        mime,
        charset,
        body,
        validators: { etag: res.headers.etag, lastModified: res.headers["last-modified"] },
      };
    } catch (err) {
      res.destroy();
      throw toFetchError(err, url, signal);
    }
  }

  /**
   * One request as a browser made it (lib/web/render): any method and content type, a redirect
   * answered rather than followed (the browser follows it, and its next request comes back
   * here), and the body of any status, decoded and within `maxBytes`.
   */
  async relay(
    input: string | URL,
    request: { method: string; headers: Record<string, string>; body?: Buffer | undefined },
    options: { timeoutMs: number; maxBytes: number },
  ): Promise<Relayed> {
    const signal = AbortSignal.timeout(options.timeoutMs);
    const url = this.check(input);
    const headers = { ...request.headers, "accept-encoding": "gzip, deflate, br" };
    const res = await this.open(url, { ...request, headers }, signal);
    try {
      const body = await readBody(res, url, options.maxBytes, this.policy.maxEncodings, signal);
      return { url: url.href, status: res.statusCode ?? 0, headers: res.headers, body };
    } catch (err) {
      res.destroy();
      throw toFetchError(err, url, signal);
    }
  }

  /** Sends one request to a checked URL, every address it resolves to checked on the connection. */
  private open(
    url: URL,
    request: {
      method: string;
      headers: Record<string, string>;
      body?: string | Buffer | undefined;
    },
    signal: AbortSignal,
  ): Promise<IncomingMessage> {
    let refused: FetchError | undefined;
    const lookup = this.guardedLookup(url.hostname, (err) => {
      refused = err;
    });
    return new Promise((resolve, reject) => {
      const req = (url.protocol === "https:" ? https : http).request({
        host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: { "user-agent": this.policy.userAgent, ...request.headers },
        lookup,
        agent: false,
        signal,
      });
      req.on("error", (err) => reject(refused ?? toFetchError(err, url, signal)));
      req.on("response", resolve);
      req.end(request.body);
    });
  }

  /** A `lookup` for the socket that refuses the connection unless every address is allowed. */
  private guardedLookup(urlHost: string, onRefused: (err: FetchError) => void): LookupFunction {
    const allowPrivate = privateAllowed(this.policy, urlHost);
    return (hostname, options, callback) => {
      this.policy
        .resolve(hostname)
        .then((found) => {
          // Node 20+ asks for every family at once (autoSelectFamily), so no family narrows this.
          // Stryker disable next-line all: equivalent on this runtime, see above
          const addresses = found.filter((a) => !options.family || a.family === options.family);
          if (addresses.length === 0) {
            throw new FetchError("dns_failure", `${hostname} has no address`);
          }
          for (const { address } of allowPrivate ? [] : addresses) {
            const range = blockedRange(address);
            if (range !== undefined) {
              const err = new FetchError(
                "blocked_address",
                `${hostname} resolves to ${address}, which is not a public address (${range})`,
              );
              onRefused(err);
              throw err;
            }
          }
          const [first] = addresses as [ResolvedAddress];
          // Stryker disable next-line ConditionalExpression: Node 20+ always asks for all addresses
          if (options.all) callback(null, addresses);
          else callback(null, first.address, first.family);
        })
        .catch((err: unknown) => {
          callback(
            err instanceof FetchError
              ? err
              : new FetchError("dns_failure", `${hostname} could not be resolved`),
            // Stryker disable next-line StringLiteral: no address is read beside an error
            "",
          );
        });
    };
  }
}

/** Error bodies read to tell a bot wall from a plain refusal; a wall is a small page. */
const WALL_BODY_BYTES = 256 * 1024;

/**
 * Throws `blocked` when an error answer (401, 403, 429, 503) is a bot wall: a challenge header,
 * or a body that is a challenge, captcha or block page (render/detect.ts). Otherwise returns and
 * the status stays an `http_error`.
 */
async function refuseWall(
  res: IncomingMessage,
  url: URL,
  maxEncodings: number,
  signal: AbortSignal,
): Promise<void> {
  const header = res.headers["cf-mitigated"];
  let text = "";
  try {
    const body = await readBody(res, url, WALL_BODY_BYTES, maxEncodings, signal);
    text = decodeText(body, parseContentType(res.headers["content-type"]).charset);
  } catch (err) {
    // A large or unreadable error body is no wall page; the status says enough.
    if (!(err instanceof FetchError)) throw err;
  }
  const wall = blockedBy(profilePage(text), typeof header === "string" ? header : undefined);
  if (wall) {
    throw new FetchError(
      "blocked",
      `${url.href} answered HTTP ${res.statusCode} with ${wall} instead of the page`,
      res.statusCode,
    );
  }
}

function absolute(location: string, base: URL): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw new FetchError("invalid_url", `${base.href} redirected to an invalid URL`);
  }
}

/** The body, decoded layer by layer, failing as soon as the decoded size passes the cap. */
async function readBody(
  res: IncomingMessage,
  url: URL,
  maxBytes: number,
  maxEncodings: number,
  signal: AbortSignal,
): Promise<Buffer> {
  const encodings = (res.headers["content-encoding"] ?? "")
    .split(",")
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== "" && e !== "identity");
  if (encodings.length > maxEncodings) {
    throw new FetchError(
      "unsupported_encoding",
      `${url.href} is encoded ${encodings.length} times; at most ${maxEncodings} layers are accepted`,
    );
  }
  const decoders = encodings.reverse().map((encoding) => {
    const decoder = DECODERS[encoding];
    if (!decoder) {
      throw new FetchError("unsupported_encoding", `${url.href} uses unknown encoding ${encoding}`);
    }
    return decoder();
  });
  const declared = Number(res.headers["content-length"]);
  if (decoders.length === 0 && declared > maxBytes) throw tooLarge(url, maxBytes);

  const chunks: Buffer[] = [];
  let size = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > maxBytes) return done(tooLarge(url, maxBytes));
      chunks.push(chunk);
      done();
    },
  });
  await pipeline([res, ...decoders, sink], { signal });
  return Buffer.concat(chunks);
}

/** The first `maxBytes` of a body as sent (no decoding), the rest left unread. */
async function readStart(res: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= maxBytes) break;
  }
  return Buffer.concat(chunks).subarray(0, maxBytes);
}

const tooLarge = (url: URL, maxBytes: number) =>
  new FetchError("too_large", `${url.href} is larger than ${maxBytes} bytes`);

function toFetchError(err: unknown, url: URL, signal: AbortSignal): FetchError {
  if (err instanceof FetchError) return err;
  if (signal.aborted) return new FetchError("timeout", `${url.href} did not answer in time`);
  const code = (err as NodeJS.ErrnoException).code ?? "";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") {
    return new FetchError("dns_failure", `${url.hostname} could not be resolved`);
  }
  if (code.startsWith("Z_")) {
    return new FetchError("unsupported_encoding", `${url.href} sent a corrupt compressed body`);
  }
  return new FetchError(
    "connection_failed",
    `${url.href} could not be reached (${code || "error"})`,
  );
}
