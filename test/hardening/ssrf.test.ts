import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockedRange } from "../../lib/web/address.js";
import { expectWellFormed, send } from "./probe.js";
import { type Hardened, startHardened } from "./runtime.js";
import { startWatchedSite, type WatchedSite } from "./watched.js";

/**
 * The SSRF matrix, with the private-URL switch off (as in production): every feature that fetches
 * is handed private, loopback, link-local and metadata addresses in every spelling a URL parser
 * accepts. Each is refused at the API (a 400 naming the field) or ends `failed` / `ok: false`
 * with a refusal, never a connection: a server on both loopback addresses, on the port the URLs
 * name, records every connection it accepts, and must accept none.
 */

let h: Hardened;
let watched: WatchedSite;
/** A name of this host that resolves to loopback (`/etc/hosts`), when it has one: the DNS path. */
let loopbackName: string | undefined;

beforeAll(async () => {
  watched = await startWatchedSite();
  // Webhook deliveries give up after two attempts, so the queue settles at once.
  h = await startHardened({ allowPrivate: false, env: { WEBHOOK_RETRY_SECONDS: "0" } });
  const name = hostname();
  const addresses = await lookup(name, { all: true }).catch(() => []);
  if (addresses.length > 0 && addresses.every((a) => blockedRange(a.address) === "loopback")) {
    loopbackName = name;
  }
});
afterAll(async () => {
  await h.close();
  await watched.close();
});

/** URLs that reach the watched server if anything connects to them. */
function loopbackUrls(): string[] {
  const p = watched.port;
  return [
    `http://127.0.0.1:${p}/`,
    `http://127.1:${p}/`,
    `http://127.0.1:${p}/`,
    `http://0x7f.0.0.1:${p}/`,
    `http://0x7f000001:${p}/`,
    `http://2130706433:${p}/`,
    `http://017700000001:${p}/`,
    `http://0177.0.0.01:${p}/`,
    `http://127.000.000.001:${p}/`,
    `http://127.0.0.1.:${p}/`,
    `http://%31%32%37.0.0.1:${p}/`,
    `http://①②⑦.⓪.⓪.①:${p}/`,
    `http://１２７．０．０．１:${p}/`,
    `http://0.0.0.0:${p}/`,
    `http://0:${p}/`,
    `http://[::1]:${p}/`,
    `http://[::]:${p}/`,
    `http://[0:0:0:0:0:0:0:1]:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://[::ffff:7f00:1]:${p}/`,
    `http://[0:0:0:0:0:ffff:127.0.0.1]:${p}/`,
    `http://[::127.0.0.1]:${p}/`,
    `http://[64:ff9b::7f00:1]:${p}/`,
    `http://localhost:${p}/`,
    `http://LOCALHOST:${p}/`,
    `http://localhost.:${p}/`,
    `http://LocalHost.:${p}/admin`,
    `http://app.localhost:${p}/`,
    `http://user:secret@127.0.0.1:${p}/`,
    `http://example.com@127.0.0.1:${p}/`,
    `http://127.0.0.1:${p}#@example.com/`,
    `http://127.0.0.1:${p}\\@example.com/`,
    `https://127.0.0.1:${p}/`,
    `gopher://127.0.0.1:${p}/_GET%20/`,
    `ftp://127.0.0.1:${p}/`,
    `dict://127.0.0.1:${p}/info`,
    `ws://127.0.0.1:${p}/`,
    ...(loopbackName ? [`http://${loopbackName}:${p}/`] : []),
  ];
}

/** Private and metadata targets elsewhere: refused by address, never tried. */
const ELSEWHERE = [
  "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
  "http://0xa9fea9fe/latest/meta-data/",
  "http://2852039166/latest/meta-data/",
  "http://[::ffff:169.254.169.254]/latest/meta-data/",
  "http://[::ffff:a9fe:a9fe]/",
  "http://[64:ff9b::a9fe:a9fe]/",
  "http://[fd00:ec2::254]/latest/meta-data/",
  "http://100.100.100.200/latest/meta-data/",
  "http://metadata.google.internal/computeMetadata/v1/",
  "http://10.0.0.1/",
  "http://172.16.0.1/",
  "http://192.168.1.1/",
  "http://100.64.0.1/",
  "http://198.18.0.1/",
  "http://224.0.0.1/",
  "http://240.0.0.1/",
  "http://255.255.255.255/",
  "http://[fe80::1]/",
  "http://[fc00::1]/",
  "http://[ff02::1]/",
  "http://[2001:db8::1]/",
  "file:///etc/passwd",
  "data:text/html,<h1>hi</h1>",
  "javascript:alert(1)",
];

/** What a refused fetch may fail with: a refusal, never the trace of a connection attempt. */
const REFUSALS = ["blocked_address", "invalid_url", "dns_failure"];

interface Outcome {
  url: string;
  how: string;
}

/** A 400 naming the field, or an accepted id; anything else fails the test. */
async function submit(path: string, field: string, url: string, idField: string) {
  const answer = await send(h.rt.url, {
    method: "POST",
    path,
    key: h.rt.key,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ [field]: url }),
  });
  expectWellFormed(`${path} ${url}`, answer);
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  if (answer.status === 400) {
    expect(body, `${path} ${url}`).toMatchObject({
      error: { code: "validation_failed", details: { issues: [{ path: field }] } },
    });
    return undefined;
  }
  expect([200, 201], `${path} ${url}: ${answer.text}`).toContain(answer.status);
  return String(body[idField]);
}

const everyUrl = () => [...loopbackUrls(), ...ELSEWHERE];

describe("the SSRF matrix, private URLs not allowed", () => {
  it("runs with the private-URL switch off", () => {
    expect(process.env.ALLOW_PRIVATE_URLS).toBe("false");
    expect(loopbackUrls().length).toBeGreaterThan(30);
  });

  it("refuses every private spelling as a URL source, at the API or as a failed source", async () => {
    const accepted: Array<Outcome & { id: string }> = [];
    for (const url of everyUrl()) {
      const id = await submit("/api/knowledge", "url", url, "id");
      if (id) accepted.push({ url, how: "accepted", id });
    }
    await h.rt.runtime.queues.idle();
    for (const { url, id } of accepted) {
      const source = (await (await h.rt.call(`/api/knowledge/${id}`)).json()) as {
        status: string;
        error_code: string | null;
      };
      expect(source.status, url).toBe("failed");
      expect(REFUSALS, `${url} failed with ${source.error_code}`).toContain(source.error_code);
    }
    expect(watched.connections).toEqual([]);
  });

  it("refuses every private spelling as a crawl seed, at the API or as a failed crawl", async () => {
    const accepted: Array<{ url: string; id: string }> = [];
    for (const url of everyUrl()) {
      const id = await submit("/api/knowledge/crawl", "seedUrl", url, "crawlId");
      if (id) accepted.push({ url, id });
    }
    await h.rt.runtime.queues.idle();
    for (const { url, id } of accepted) {
      const crawl = (await (await h.rt.call(`/api/knowledge/crawl/${id}`)).json()) as {
        status: string;
        pagesIndexed: number;
      };
      // Refused by name resolution, the seed ends its crawl with nothing indexed, and its page
      // report names the refusal (not robots.txt, whose fetch was refused the same way).
      expect(["failed", "completed"], `${url}: ${crawl.status}`).toContain(crawl.status);
      expect(crawl.pagesIndexed, url).toBe(0);
      const { pages } = (await (await h.rt.call(`/api/knowledge/crawl/${id}/pages`)).json()) as {
        pages: Array<{ status: string; reason: string | null }>;
      };
      for (const page of pages) {
        expect(REFUSALS, `${url}: ${JSON.stringify(page)}`).toContain(page.reason);
      }
    }
    expect(watched.connections).toEqual([]);
  });

  it("refuses every private spelling as a competitor, at the API or as a check that reads nothing", async () => {
    const domains = [
      ...everyUrl(),
      // Competitors are also given as bare hosts, which are tried over https, then http.
      `127.0.0.1:${watched.port}`,
      `0x7f.1:${watched.port}`,
      `2130706433:${watched.port}`,
      `localhost:${watched.port}`,
      `app.localhost:${watched.port}`,
      "169.254.169.254",
      "metadata.google.internal",
    ];
    let checked = 0;
    const refused: string[] = [];
    for (const domain of domains) {
      const answer = await send(h.rt.url, {
        method: "POST",
        path: "/api/intel/competitors",
        key: h.rt.key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ domain }),
      });
      expectWellFormed(`competitor ${domain}`, answer);
      // 409: another spelling of the same host is tracked already, and was checked.
      expect([201, 400, 409], `${domain}: ${answer.text}`).toContain(answer.status);
      if (answer.status === 400) {
        expect(JSON.parse(answer.text), domain).toMatchObject({
          error: { code: "validation_failed", details: { issues: [{ path: "domain" }] } },
        });
        refused.push(domain);
      }
      if (answer.status !== 201) continue;
      const { id } = JSON.parse(answer.text) as { id: string };
      const check = await send(h.rt.url, {
        method: "POST",
        path: `/api/intel/competitors/${id}/check`,
        key: h.rt.key,
      });
      expectWellFormed(`check of ${domain}`, check);
      expect(JSON.parse(check.text), `${domain}: ${check.text}`).toMatchObject({
        result: { ok: false, changed: false },
      });
      // Refused before connecting: the reason is the address or the name, never a failed connection.
      const { summary } = (JSON.parse(check.text) as { result: { summary: string } }).result;
      expect(summary, domain).not.toMatch(/timed out|refused|reset|ECONN|socket|TLS|certificate/i);
      checked++;
    }
    // Literal private addresses and local names are refused at the API, as URL sources are; only
    // names that DNS alone can judge get as far as a check, which reads nothing.
    expect(refused).toEqual(
      expect.arrayContaining([
        `127.0.0.1:${watched.port}`,
        `0x7f.1:${watched.port}`,
        `2130706433:${watched.port}`,
        `app.localhost:${watched.port}`,
        "169.254.169.254",
        ...ELSEWHERE.filter((url) => /^http:\/\/[\d.x]+\//.test(url)),
      ]),
    );
    expect(checked, "competitors tracked and checked").toBeGreaterThan(0);

    // The same competitors once more, through the queue and the checks worker.
    const all = await h.rt.call("/api/intel/competitors/check-all", { method: "POST" });
    expect(all.status).toBe(202);
    await h.rt.runtime.queues.idle();
    const events = (await (await h.rt.call("/api/intel/events")).json()) as { events: unknown[] };
    expect(events.events).toEqual([]);
    expect(watched.connections).toEqual([]);
  });

  it("refuses every private spelling as a webhook endpoint, at the API or on each delivery", async () => {
    const accepted: Array<{ url: string; id: string }> = [];
    for (const url of everyUrl()) {
      const answer = await send(h.rt.url, {
        method: "POST",
        path: "/api/webhooks",
        key: h.rt.key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url, events: ["source.indexed"] }),
      });
      expectWellFormed(`webhook ${url}`, answer);
      if (answer.status === 400) {
        expect(JSON.parse(answer.text), url).toMatchObject({
          error: { code: "validation_failed", details: { issues: [{ path: "url" }] } },
        });
        continue;
      }
      expect(answer.status, `${url}: ${answer.text}`).toBe(201);
      const { id } = JSON.parse(answer.text) as { id: string };
      accepted.push({ url, id });
      expect((await h.rt.call(`/api/webhooks/${id}/test`, { method: "POST" })).status).toBe(202);
    }
    await h.rt.runtime.queues.idle();
    for (const { url, id } of accepted) {
      const { deliveries } = (await (await h.rt.call(`/api/webhooks/${id}/deliveries`)).json()) as {
        deliveries: Array<{ statusCode: number | null; error: string }>;
      };
      expect(deliveries.length, url).toBe(2);
      for (const { statusCode, error } of deliveries) {
        // Refused before connecting: the address or the name, never a failed connection.
        expect(statusCode, url).toBeNull();
        expect(error, url).not.toMatch(/timed out|could not be reached|ECONN|socket/i);
      }
    }
    // Literal addresses and local names are refused at the API; names only DNS can judge get
    // as far as a delivery, which connects to nothing.
    expect(accepted.length, "endpoints registered and tried").toBeGreaterThan(0);
    expect(watched.connections).toEqual([]);
  });

  it("watches a server that does accept connections: the matrix could have seen one", async () => {
    const res = await fetch(`http://127.0.0.1:${watched.port}/`);
    expect(res.status).toBe(200);
    expect(watched.connections.length).toBeGreaterThan(0);
  });
});
