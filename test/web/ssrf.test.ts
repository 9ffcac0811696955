import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FetchError } from "../../lib/web/errors.js";
import { type ResolvedAddress, SafeFetcher } from "../../lib/web/fetch.js";
import { htmlPage, redirect, respond, type Site, startSite } from "../support/sites.js";

/**
 * The SSRF matrix: every refused form must fail with no request reaching the fixture servers,
 * which listen on loopback. Private targets are NOT allowed here (no `allowPrivate`).
 */

const DNS: Record<string, ResolvedAddress[]> = {
  "public-looking.example": [{ address: "127.0.0.1", family: 4 }],
  "v6-loopback.example": [{ address: "::1", family: 6 }],
  "mixed.example": [
    { address: "93.184.215.14", family: 4 },
    { address: "127.0.0.1", family: 4 },
  ],
  "mapped.example": [{ address: "::ffff:127.0.0.1", family: 6 }],
  "metadata.example": [{ address: "169.254.169.254", family: 4 }],
  "private.example": [{ address: "10.1.2.3", family: 4 }],
  "nat64.example": [{ address: "64:ff9b::a00:1", family: 6 }],
  "redirector.test": [{ address: "127.0.0.1", family: 4 }],
};

const resolve = async (hostname: string) => {
  const found = DNS[hostname];
  if (!found) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
  return found;
};

const guarded = new SafeFetcher({ allowPrivate: false, timeoutMs: 2000, resolve });

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof FetchError)) throw new Error(`expected a FetchError, got ${String(err)}`);
  return err.code;
}

describe("SSRF guard", () => {
  let target: Site;
  let redirector: Site;

  beforeAll(async () => {
    target = await startSite({ "/": respond(htmlPage("Internal", "<p>secret</p>")) });
    const port = target.port;
    redirector = await startSite({
      "/to-literal": redirect(`http://127.0.0.1:${port}/`),
      "/to-decimal": redirect(`http://2130706433:${port}/`),
      "/to-name": redirect(`http://public-looking.example:${port}/`),
      "/to-v6": redirect(`http://[::1]:${port}/`),
      "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
      "/to-file": redirect("file:///etc/passwd"),
      "/to-gopher": redirect(`gopher://127.0.0.1:${port}/`),
    });
  });
  afterAll(() => Promise.all([target.close(), redirector.close()]));

  const literalForms = (port: number) => [
    `http://127.0.0.1:${port}/`,
    `http://127.1:${port}/`,
    `http://2130706433:${port}/`,
    `http://0x7f000001:${port}/`,
    `http://0x7f.0.0.1:${port}/`,
    `http://017700000001:${port}/`,
    `http://0177.0.0.01:${port}/`,
    `http://0:${port}/`,
    `http://0.0.0.0:${port}/`,
    `http://[::1]:${port}/`,
    `http://[::]:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://[0:0:0:0:0:ffff:7f00:1]:${port}/`,
    `http://[::127.0.0.1]:${port}/`,
    `http://[64:ff9b::127.0.0.1]:${port}/`,
    `http://[::ffff:0:127.0.0.1]:${port}/`,
    `http://localhost:${port}/`,
    `http://LOCALHOST.:${port}/`,
    `http://app.localhost:${port}/`,
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0xa9fea9fe/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[fd00:ec2::254]/",
    "http://[fc00::1]/",
    "http://[fec0::1]/",
    "http://224.0.0.1/",
    "http://[ff02::1]/",
    "http://255.255.255.255/",
    "http://240.0.0.1/",
    "http://192.0.2.1/",
    "http://[2001:db8::1]/",
  ];

  it("refuses every private or special literal address before connecting", async () => {
    for (const url of literalForms(target.port)) {
      expect([url, await codeOf(guarded.fetch(url))]).toEqual([url, "blocked_address"]);
    }
  });

  it("refuses a name whose A or AAAA records are not all public, on the connection path", async () => {
    for (const host of Object.keys(DNS).filter((h) => h !== "redirector.test")) {
      const url = `http://${host}:${target.port}/`;
      expect(guarded.check(url).href).toBe(url);
      expect([host, await codeOf(guarded.fetch(url))]).toEqual([host, "blocked_address"]);
    }
  });

  it("names the address and its range when it refuses a name", async () => {
    const err = await guarded.fetch(`http://mixed.example:${target.port}/`).catch((e) => e);
    expect(err).toMatchObject({
      code: "blocked_address",
      message: "mixed.example resolves to 127.0.0.1, which is not a public address (loopback)",
    });
  });

  it("connects to a name whose every address is public (positive control)", async () => {
    const publicOnly = new SafeFetcher({
      allowPrivate: false,
      timeoutMs: 300,
      resolve: async () => [{ address: "93.184.215.14", family: 4 }],
    });
    // Without a network the connection fails or times out; with one it may answer. Never refused.
    const outcome = await publicOnly.fetch("http://public.example/").then(
      () => "answered",
      (e: unknown) => (e instanceof FetchError ? e.code : String(e)),
    );
    expect(["answered", "connection_failed", "timeout", "http_error"]).toContain(outcome);
  });

  it("connects to such a name only when it is explicitly trusted (positive control)", async () => {
    const trusting = new SafeFetcher({
      allowPrivate: false,
      trustedHosts: ["redirector.test"],
      resolve,
    });
    const res = await trusting
      .fetch(`http://redirector.test:${redirector.port}/to-missing`)
      .catch((e: unknown) => e);
    expect(res).toMatchObject({ code: "http_error", status: 404 });
  });

  it("checks every redirect hop again", async () => {
    const trusting = new SafeFetcher({
      allowPrivate: false,
      trustedHosts: ["redirector.test"],
      resolve,
      timeoutMs: 2000,
    });
    const base = `http://redirector.test:${redirector.port}`;
    for (const [path, code] of [
      ["/to-literal", "blocked_address"],
      ["/to-decimal", "blocked_address"],
      ["/to-name", "blocked_address"],
      ["/to-v6", "blocked_address"],
      ["/to-metadata", "blocked_address"],
      ["/to-file", "invalid_url"],
      ["/to-gopher", "invalid_url"],
    ] as const) {
      expect([path, await codeOf(trusting.fetch(`${base}${path}`))]).toEqual([path, code]);
    }
    expect(redirector.requests).toContain("/to-name");
  });

  it("refuses other schemes and credentials without any lookup", async () => {
    let lookups = 0;
    const counting = new SafeFetcher({
      allowPrivate: false,
      resolve: async (h) => {
        lookups++;
        return resolve(h);
      },
    });
    for (const url of [
      "file:///etc/passwd",
      "ftp://example.com/",
      "gopher://example.com/",
      "javascript:alert(1)",
      "data:text/html,hi",
      "http://user:pass@example.com/",
      "http://user@example.com/",
      "not a url",
      `http://example.com/${"a".repeat(3000)}`,
    ]) {
      expect([url.slice(0, 40), await codeOf(counting.fetch(url))]).toEqual([
        url.slice(0, 40),
        "invalid_url",
      ]);
    }
    expect(lookups).toBe(0);
  });

  it("refuses a POST (webhook delivery) to a private target, literal or resolved", async () => {
    const request = { headers: { "content-type": "application/json" }, body: "{}" };
    for (const url of [
      `http://127.0.0.1:${target.port}/`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://public-looking.example:${target.port}/`,
      `http://mapped.example:${target.port}/`,
    ]) {
      expect([url, await codeOf(guarded.post(url, request))]).toEqual([url, "blocked_address"]);
    }
  });

  it("let no request reach the private target in any of the cases above", () => {
    expect(target.requests).toEqual([]);
  });
});
