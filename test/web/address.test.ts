import { describe, expect, it } from "vitest";
import { blockedRange, literalAddress } from "../../lib/web/address.js";

describe("blockedRange", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["10.0.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.0.1", "private"],
    ["100.64.0.1", "carrierGradeNat"],
    ["169.254.169.254", "linkLocal"],
    ["0.0.0.0", "unspecified"],
    ["224.0.0.251", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "linkLocal"],
    ["fd00:ec2::254", "uniqueLocal"],
    ["fc00::1", "uniqueLocal"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "ipv4Mapped"],
    ["::ffff:8.8.8.8", "ipv4Mapped"],
    ["::7f00:1", "reserved"],
    ["fec0::1", "deprecatedSiteLocal"],
    ["2001:db8::1", "reserved"],
    ["2002:7f00:1::1", "6to4"],
    ["2001::1", "teredo"],
    ["64:ff9b::7f00:1", "nat64 of loopback"],
    ["64:ff9b::a9fe:a9fe", "nat64 of linkLocal"],
    ["64:ff9b:1::a00:1", "rfc6052"],
    ["not-an-ip", "invalid"],
  ])("refuses %s (%s)", (address, range) => {
    expect(blockedRange(address)).toBe(range);
  });

  it.each([
    "93.184.215.14",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "64:ff9b::808:808",
  ])("allows public unicast %s", (address) => {
    expect(blockedRange(address)).toBeUndefined();
  });
});

describe("literalAddress", () => {
  it("finds the address in IP-literal hosts, as the URL parser leaves them", () => {
    expect(literalAddress(new URL("http://2130706433/").hostname)).toBe("127.0.0.1");
    expect(literalAddress(new URL("http://0x7f.1/").hostname)).toBe("127.0.0.1");
    expect(literalAddress(new URL("http://[::ffff:127.0.0.1]/").hostname)).toBe("::ffff:7f00:1");
    expect(literalAddress("example.com")).toBeUndefined();
    expect(literalAddress("1.2.3.4.example")).toBeUndefined();
  });

  it.each([
    ["[::1", "an opening bracket alone"],
    ["::1]", "a closing bracket alone"],
    ["x::1]", "text then a closing bracket"],
    ["[::1x", "an opening bracket then text"],
    ["not:an:address", "colons that make no address"],
    ["1.2.3", "an IPv4 address of fewer than four parts"],
  ])("finds no address in %s (%s)", (host) => {
    expect(literalAddress(host)).toBeUndefined();
  });
});
