import ipaddr from "ipaddr.js";

/**
 * Which IP addresses the service may connect to: public unicast only. ipaddr.js names the special
 * ranges (loopback, RFC 1918, CGNAT, link-local with the metadata address, multicast, reserved...);
 * everything it does not call `unicast` is refused, and IPv6 must also be global unicast (2000::/3),
 * which rules out IPv4-compatible (::a.b.c.d), site-local and other legacy forms.
 */

// A broken range fails the module's import, which Stryker's Vitest runner counts as a survivor
// rather than a kill (stryker-js issue 6150); every test of this file would fail.
// Stryker disable next-line StringLiteral: see above
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");
/** NAT64 well-known prefix (RFC 6052): the last 32 bits are an IPv4 address reached through a gateway. */
// Stryker disable next-line StringLiteral: as above
const NAT64 = ipaddr.IPv6.parseCIDR("64:ff9b::/96");

function blockedV4(address: ipaddr.IPv4): string | undefined {
  const range = address.range();
  return range === "unicast" ? undefined : range;
}

/** The name of the range that makes an address unfit to connect to, or undefined when it is public. */
export function blockedRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "invalid";
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv4") return blockedV4(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  if (v6.match(NAT64)) {
    // Only as public as the IPv4 address it translates to.
    const inner = blockedV4(new ipaddr.IPv4(v6.toByteArray().slice(12)));
    return inner === undefined ? undefined : `nat64 of ${inner}`;
  }
  const range = v6.range();
  if (range !== "unicast") return range;
  return v6.match(GLOBAL_UNICAST_V6) ? undefined : "reserved";
}

/** The address inside an IP-literal URL host (`127.0.0.1`, `[::1]`), or undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const bare =
    hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(":") || ipaddr.IPv4.isValidFourPartDecimal(bare))
    ? bare
    : undefined;
}
