import { describe, expect, it } from "vitest";
import { homepageCandidates, normalizeDomain } from "../../lib/competitors/domain.js";
import { DomainError } from "../../lib/errors.js";

describe("normalizeDomain", () => {
  it.each([
    ["acme.com", "acme.com", null],
    ["  ACME.com  ", "acme.com", null],
    ["www.acme.com", "acme.com", null],
    ["acme.com/pricing?ref=x#top", "acme.com", null],
    ["acme.com.", "acme.com", null],
    ["acme.com:443", "acme.com", null],
    ["acme.com:8443", "acme.com:8443", null],
    ["https://www.Acme.com", "acme.com", "https://www.acme.com/"],
    ["https://acme.com:443/en/?utm=1", "acme.com", "https://acme.com/en/"],
    ["http://acme.com:8080/start", "acme.com:8080", "http://acme.com:8080/start"],
    ["münchen.de", "xn--mnchen-3ya.de", null],
    ["https://www.bücher.example/", "xn--bcher-kva.example", "https://www.xn--bcher-kva.example/"],
    ["www.com", "www.com", null],
    ["shop.acme.co.uk", "shop.acme.co.uk", null],
    ["127.0.0.1:8080", "127.0.0.1:8080", null],
  ])("%j is %s", (input, domain, homepage) => {
    expect(normalizeDomain(input)).toEqual({ domain, homepage });
  });

  it.each([
    "",
    "   ",
    "acme",
    "localhost",
    "acme..com",
    "-acme.com",
    "acme-.com",
    "acme.123",
    "ac me.com",
    "acme_corp.com",
    "ftp://acme.com",
    "mailto:someone@acme.com",
    "https://user:secret@acme.com/",
    "[::1]",
    `${"a".repeat(64)}.com`,
  ])("refuses %j with a 400", (input) => {
    const error = (() => {
      try {
        normalizeDomain(input);
      } catch (err) {
        return err;
      }
    })();
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: "validation_failed" });
  });
});

describe("homepageCandidates", () => {
  it("tries https then http for a bare domain", () => {
    expect(homepageCandidates({ domain: "acme.com:8443", homepage: null })).toEqual([
      "https://acme.com:8443/",
      "http://acme.com:8443/",
    ]);
  });

  it("uses only the given homepage when a URL was added", () => {
    expect(homepageCandidates({ domain: "acme.com", homepage: "http://acme.com/en/" })).toEqual([
      "http://acme.com/en/",
    ]);
  });
});
