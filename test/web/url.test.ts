import { describe, expect, it } from "vitest";
import { FetchError } from "../../lib/web/errors.js";
import { canonicalUrl, checkUrl } from "../../lib/web/url.js";

const strict = { allowPrivate: false };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof FetchError) return err.code;
    throw err;
  }
}

describe("checkUrl", () => {
  it("answers the parsed URL of a public http(s) address", () => {
    expect(checkUrl("https://Example.COM:443/a?b=1#c", strict).href).toBe(
      "https://example.com/a?b=1#c",
    );
    expect(checkUrl("http://93.184.215.14/", strict).hostname).toBe("93.184.215.14");
  });

  it("relies on the WHATWG parser to normalise numeric IPv4 spellings", () => {
    for (const host of [
      "2130706433",
      "0x7f000001",
      "017700000001",
      "0x7f.1",
      "127.1",
      "0177.0.1",
    ]) {
      expect(new URL(`http://${host}/`).hostname).toBe("127.0.0.1");
    }
  });

  it.each([
    ["file:///etc/passwd", "invalid_url"],
    ["ftp://example.com/", "invalid_url"],
    ["http://u:p@example.com/", "invalid_url"],
    ["http://", "invalid_url"],
    ["http://2130706433/", "blocked_address"],
    ["http://[::ffff:7f00:1]/", "blocked_address"],
    ["http://169.254.169.254/", "blocked_address"],
    ["http://localhost/", "blocked_address"],
    ["http://x.localhost./", "blocked_address"],
  ])("refuses %s (%s)", (url, code) => {
    expect(codeOf(() => checkUrl(url, strict))).toBe(code);
  });

  it("refuses URLs longer than 2048 characters, counting the whole text", () => {
    const url = (length: number) => {
      const base = "https://example.com/";
      return `${base}${"a".repeat(length - base.length)}`;
    };
    expect(checkUrl(url(2048), strict).href).toHaveLength(2048);
    expect(codeOf(() => checkUrl(url(2049), strict))).toBe("invalid_url");
  });

  it.each([
    [`https://example.com/${"a".repeat(2100)}`, /limited to 2048 characters/],
    [`not a url ${"x".repeat(1000)}`, /^"not a url x{190}" is not a valid URL$/],
    ["ftp://example.com/", /Only http and https URLs can be fetched, not ftp:/],
    ["http://u:p@example.com/", /with a user name or password/],
    ["http://10.0.0.1/", /^10\.0\.0\.1 is not a public address \(private\)/],
    ["http://app.localhost/", /^app\.localhost is a local host name$/],
  ])("explains why it refuses %s", (url, message) => {
    expect(() => checkUrl(url, strict)).toThrow(message);
  });

  it("allows private targets when told to, but never other schemes or credentials", () => {
    expect(checkUrl("http://127.0.0.1:8080/", { allowPrivate: true }).port).toBe("8080");
    expect(checkUrl("http://localhost/", { allowPrivate: true }).hostname).toBe("localhost");
    expect(codeOf(() => checkUrl("file:///etc/passwd", { allowPrivate: true }))).toBe(
      "invalid_url",
    );
    expect(
      checkUrl("http://10.0.0.5/", { allowPrivate: false, trustedHosts: ["10.0.0.5"] }).hostname,
    ).toBe("10.0.0.5");
  });
});

describe("canonicalUrl", () => {
  it.each([
    ["HTTP://Example.COM:80/a/#frag", "http://example.com/a"],
    ["https://example.com:443/", "https://example.com/"],
    ["https://example.com", "https://example.com/"],
    ["https://example.com./docs/", "https://example.com/docs"],
    ["https://user:pw@example.com/x", "https://example.com/x"],
    ["https://example.com/a?utm_source=x&utm_medium=y&b=2&a=1", "https://example.com/a?a=1&b=2"],
    [
      "https://example.com/a?gclid=1&fbclid=2&msclkid=3&ref=hn&SessionId=4&PHPSESSID=5&sid=6&q=x",
      "https://example.com/a?q=x",
    ],
    ["https://example.com/a;jsessionid=ABC123?x=1", "https://example.com/a?x=1"],
    ["https://example.com/a?b=2&a=1&b=1", "https://example.com/a?a=1&b=2&b=1"],
    ["https://example.com/a?q=a%20b&&", "https://example.com/a?q=a%20b"],
    ["https://example.com/?", "https://example.com/"],
  ])("%s -> %s", (input, expected) => {
    expect(canonicalUrl(input)).toBe(expected);
  });

  it("resolves relative links against a base and ignores non-web schemes", () => {
    expect(canonicalUrl("../b/?utm_campaign=z", "https://example.com/a/c/d")).toBe(
      "https://example.com/a/b",
    );
    expect(canonicalUrl("mailto:someone@example.com")).toBeNull();
    expect(canonicalUrl("javascript:void(0)", "https://example.com/")).toBeNull();
    expect(canonicalUrl("http://[bad")).toBeNull();
  });
});
