import { blockedRange, literalAddress } from "./address.js";
import { FetchError } from "./errors.js";

/** Longest URL the service fetches or stores; longer ones are almost always traps or junk. */
export const MAX_URL_LENGTH = 2048;

export interface UrlPolicy {
  /** Allows loopback and private targets (ALLOW_PRIVATE_URLS, for local development and tests). */
  allowPrivate: boolean;
  /** Exact host names whose private addresses are allowed even when `allowPrivate` is off. */
  trustedHosts?: readonly string[] | undefined;
}

/** Whether private addresses are acceptable for this URL host under a policy. */
export function privateAllowed(policy: UrlPolicy, hostname: string): boolean {
  return policy.allowPrivate || (policy.trustedHosts?.includes(hostname) ?? false);
}

/**
 * Checks what can be known about a URL without any network access: http(s) only, no credentials,
 * no literal private IP (numeric spellings such as `2130706433`, `0x7f.1` or `017700000001` are
 * normalised to dotted decimal by the WHATWG parser first), no `localhost`. Answers the one parse
 * that is then fetched; throws `FetchError` (`invalid_url` or `blocked_address`) otherwise.
 */
export function checkUrl(input: string | URL, policy: UrlPolicy): URL {
  const text = String(input);
  if (text.length > MAX_URL_LENGTH) {
    throw new FetchError("invalid_url", `URLs are limited to ${MAX_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new FetchError("invalid_url", `${JSON.stringify(text.slice(0, 200))} is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FetchError(
      "invalid_url",
      `Only http and https URLs can be fetched, not ${url.protocol}`,
    );
  }
  if (url.username || url.password) {
    throw new FetchError("invalid_url", "URLs with a user name or password are not fetched");
  }
  // Stryker disable next-line all: the WHATWG parser gives an http(s) URL a host or fails first
  if (!url.hostname) throw new FetchError("invalid_url", "The URL has no host");
  if (privateAllowed(policy, url.hostname)) return url;

  const literal = literalAddress(url.hostname);
  const range = literal === undefined ? undefined : blockedRange(literal);
  if (range !== undefined) {
    throw new FetchError(
      "blocked_address",
      `${url.hostname} is not a public address (${range}); only public hosts can be fetched`,
    );
  }
  const host = url.hostname.replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) {
    throw new FetchError("blocked_address", `${url.hostname} is a local host name`);
  }
  return url;
}

/** Query parameters that only track a visit or a session: dropped, so they never tell pages apart. */
const TRACKING_PARAMS = new Set([
  "gclid",
  "gclsrc",
  "dclid",
  "gbraid",
  "wbraid",
  "fbclid",
  "msclkid",
  "yclid",
  "twclid",
  "igshid",
  "mc_cid",
  "mc_eid",
  "_ga",
  "_gl",
  "_hsenc",
  "_hsmi",
  "ref",
  "ref_src",
  "sessionid",
  "session_id",
  "jsessionid",
  "phpsessid",
  "aspsessionid",
  "sid",
]);

const isTracking = (name: string) => name.startsWith("utm_") || TRACKING_PARAMS.has(name);

function paramName(pair: string): string {
  const raw = pair.split("=", 1)[0] ?? "";
  try {
    return decodeURIComponent(raw.replaceAll("+", " ")).toLowerCase();
  } catch {
    return raw.toLowerCase();
  }
}

/** A path without the slashes it ends with; `/\/+$/` would take quadratic time on a long run. */
export function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (path[end - 1] === "/") end--;
  return path.slice(0, end);
}

/**
 * The form of a URL that identifies its page: fragment, credentials and default port dropped, host
 * lowercase without a trailing dot, `;jsessionid=` path parameters and tracking or session query
 * parameters removed, the rest sorted by name (stable, raw encoding kept), and no trailing slash
 * except on the root. Null for anything that is not an http(s) URL.
 */
export function canonicalUrl(input: string | URL, base?: string | URL): string | null {
  let url: URL;
  try {
    url = new URL(input, base);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  url.hash = "";
  url.username = "";
  url.password = "";
  url.hostname = url.hostname.replace(/\.$/, "");

  let path = url.pathname.replace(/;(jsessionid|phpsessid|sid)=[^/]*/gi, "");
  if (path.length > 1) path = withoutTrailingSlashes(path) || "/";
  url.pathname = path;

  const pairs = url.search
    .slice(1)
    .split("&")
    .filter((pair) => pair !== "" && !isTracking(paramName(pair)))
    .map((pair, index) => ({ pair, name: paramName(pair), index }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.index - b.index));
  url.search = pairs.length > 0 ? `?${pairs.map((p) => p.pair).join("&")}` : "";
  return url.href;
}
