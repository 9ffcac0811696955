import { domainToASCII } from "node:url";
import { invalid } from "../errors.js";

/** A competitor's identity: the normalised domain, and the homepage when a URL was given. */
export interface CompetitorDomain {
  /** Lowercase ASCII host without a leading `www.`, with `:port` when the port is not a default. */
  domain: string;
  /** Scheme, host and path of the URL given, or null for a bare domain. */
  homepage: string | null;
}

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

const invalidDomain = (input: string, reason: string) =>
  invalid(`"${input}" is not a valid domain: ${reason}`, {
    issues: [{ path: "domain", message: reason }],
  });

/** A public host name: two or more LDH labels and a TLD that is not numeric (IPv4 literals pass too). */
function isHostName(host: string): boolean {
  if (IPV4.test(host)) return true;
  const labels = host.split(".");
  const tld = labels.at(-1) ?? "";
  return (
    host.length <= 253 &&
    labels.length >= 2 &&
    labels.every((label) => LABEL.test(label)) &&
    !/^\d+$/.test(tld)
  );
}

/**
 * Normalises what a user typed as a competitor: a bare domain (`Acme.com`, `www.acme.com/about`)
 * or a URL (`https://www.acme.com/en/`). Two spellings of one site give one `domain`, which is
 * what duplicates are detected on. Throws `validation_failed` for anything that is not a public
 * host name.
 */
export function normalizeDomain(input: string): CompetitorDomain {
  const raw = input.trim();
  if (raw === "") throw invalidDomain(input, "it is empty");
  const isUrl = SCHEME.test(raw);
  let url: URL;
  try {
    url = new URL(isUrl ? raw : `http://${raw}`);
  } catch {
    throw invalidDomain(input, "it cannot be parsed as a host name or URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalidDomain(input, "only http and https URLs are accepted");
  }
  if (url.username || url.password) throw invalidDomain(input, "credentials are not accepted");
  // URL parsing already lowercases and punycodes; domainToASCII also rejects what IDNA forbids.
  const ascii = domainToASCII(url.hostname.replace(/\.$/, ""));
  if (!ascii || !isHostName(ascii)) throw invalidDomain(input, "it is not a public host name");
  const withoutWww = ascii.startsWith("www.") ? ascii.slice(4) : ascii;
  const host = isHostName(withoutWww) ? withoutWww : ascii;
  // A bare domain is tried over https then http, so both default ports are dropped.
  const port = url.port && (isUrl || (url.port !== "80" && url.port !== "443")) ? url.port : "";
  return {
    domain: port ? `${host}:${port}` : host,
    homepage: isUrl ? `${url.protocol}//${url.host}${url.pathname}` : null,
  };
}

/** The URLs a check starts from, in order: the given homepage, or https then http. */
export function homepageCandidates({ domain, homepage }: CompetitorDomain): string[] {
  return homepage ? [homepage] : [`https://${domain}/`, `http://${domain}/`];
}
