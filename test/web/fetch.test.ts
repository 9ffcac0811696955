import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PAGE_KINDS } from "../../lib/web/content-type.js";
import { FetchError } from "../../lib/web/errors.js";
import { DEFAULT_USER_AGENT, SafeFetcher } from "../../lib/web/fetch.js";
import { htmlPage, redirect, respond, type Site, startSite } from "../support/sites.js";

const fetcher = new SafeFetcher({ allowPrivate: true, timeoutMs: 2000, maxBytes: 64 * 1024 });

async function failure(promise: Promise<unknown>): Promise<FetchError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof FetchError)) throw new Error(`expected a FetchError, got ${String(err)}`);
  return err;
}

const html = { "content-type": "text/html; charset=utf-8" };

describe("SafeFetcher (fixture site, private targets allowed)", () => {
  let site: Site;
  let headers: Record<string, string | string[] | undefined> = {};
  let posted: { method?: string | undefined; headers: typeof headers; body: Buffer } | undefined;

  beforeAll(async () => {
    site = await startSite({
      "/": (req, res) => {
        headers = req.headers;
        res.writeHead(200, html).end(htmlPage("Home", "<p>Welcome</p>"));
      },
      "/latin1": respond(Buffer.from("caf\xe9", "latin1"), {
        "content-type": "text/plain; charset=ISO-8859-1",
      }),
      "/hop1": redirect("/hop2", 302),
      "/hop2": redirect("/hop3", 307),
      "/hop3": redirect("/", 308),
      "/loop": redirect("/loop"),
      "/missing": respond("<h1>Gone</h1>", html, 404),
      "/broken": respond("oops", html, 503),
      "/huge-declared": respond(Buffer.alloc(200 * 1024, 97), html),
      "/huge-chunked": (_req, res) => {
        res.writeHead(200, html);
        for (let i = 0; i < 200; i++) res.write(Buffer.alloc(1024, 97));
        res.end();
      },
      "/trickle": (req, res) => {
        res.writeHead(200, html);
        const timer = setInterval(() => res.write("a"), 20);
        req.on("close", () => clearInterval(timer));
      },
      "/silent": () => undefined,
      "/bomb": respond(gzipSync(Buffer.alloc(20 * 1024 * 1024)), {
        ...html,
        "content-encoding": "gzip",
      }),
      "/gzip-twice": respond(gzipSync(gzipSync("twice")), {
        "content-type": "text/plain",
        "content-encoding": "gzip, gzip",
      }),
      "/gzip-thrice": respond(gzipSync(gzipSync(gzipSync("thrice"))), {
        "content-type": "text/plain",
        "content-encoding": "gzip, gzip, gzip",
      }),
      "/br": respond(brotliCompressSync("brotli"), {
        "content-type": "text/plain",
        "content-encoding": "br",
      }),
      "/deflate": respond(deflateSync("deflated"), {
        "content-type": "text/plain",
        "content-encoding": "deflate",
      }),
      "/zstd": respond("x", { "content-type": "text/plain", "content-encoding": "zstd" }),
      "/corrupt": respond("not gzip at all", {
        "content-type": "text/plain",
        "content-encoding": "gzip",
      }),
      "/file.pdf": respond("%PDF-1.4", { "content-type": "application/pdf" }),
      "/untyped": respond("who knows", {}),
      "/image.png": respond("png", { "content-type": "image/png" }),
      "/hook": (req, res) => {
        const parts: Buffer[] = [];
        req.on("data", (part: Buffer) => parts.push(part));
        req.on("end", () => {
          posted = { method: req.method, headers: req.headers, body: Buffer.concat(parts) };
          res.writeHead(500, { "content-type": "text/plain" }).end(`no: ${"x".repeat(10_000)}`);
        });
      },
    });
  });
  afterAll(() => site.close());

  it("fetches a page with a User-Agent naming the service and decompression offered", async () => {
    const res = await fetcher.fetch(`${site.origin}/`);
    expect(res).toMatchObject({ type: "content", status: 200, kind: "html", charset: "utf-8" });
    expect(res.body.toString()).toContain("Welcome");
    expect(headers["user-agent"]).toBe(DEFAULT_USER_AGENT);
    expect(headers["accept-encoding"]).toBe("gzip, deflate, br");
  });

  it("reports the declared charset", async () => {
    const res = await fetcher.fetch(`${site.origin}/latin1`);
    expect(res.charset).toBe("iso-8859-1");
    expect(new TextDecoder(res.charset).decode(res.body)).toBe("café");
  });

  it("follows redirects by hand and reports the chain", async () => {
    const res = await fetcher.fetch(`${site.origin}/hop1`);
    expect(res.url).toBe(`${site.origin}/`);
    expect(res.redirects).toEqual([
      `${site.origin}/hop1`,
      `${site.origin}/hop2`,
      `${site.origin}/hop3`,
    ]);
  });

  it("gives up after five redirects", async () => {
    const err = await failure(fetcher.fetch(`${site.origin}/loop`));
    expect(err.code).toBe("too_many_redirects");
    expect(err.message).toBe(`${site.origin}/loop redirected more than 5 times`);
    const short = new SafeFetcher({ allowPrivate: true, maxRedirects: 2 });
    expect(await failure(short.fetch(`${site.origin}/hop1`))).toMatchObject({
      code: "too_many_redirects",
      message: `${site.origin}/hop1 redirected more than 2 times`,
    });
    expect(site.requests.filter((r) => r === "/loop")).toHaveLength(6);
  });

  it("fetches once like fetch when there is no redirect", async () => {
    const res = await fetcher.fetchOnce(`${site.origin}/`);
    expect(res).toMatchObject({ type: "content", url: `${site.origin}/`, redirects: [] });
  });

  it("answers a redirect without following it when asked to fetch once", async () => {
    const res = await fetcher.fetchOnce(`${site.origin}/hop1`);
    expect(res).toEqual({
      type: "redirect",
      url: `${site.origin}/hop1`,
      status: 302,
      location: `${site.origin}/hop2`,
    });
  });

  it("turns HTTP errors into http_error with the status", async () => {
    expect(await failure(fetcher.fetch(`${site.origin}/missing`))).toMatchObject({
      code: "http_error",
      status: 404,
    });
    expect(await failure(fetcher.fetch(`${site.origin}/broken`))).toMatchObject({
      code: "http_error",
      status: 503,
    });
  });

  it("refuses bodies over the cap, declared or streamed", async () => {
    for (const path of ["/huge-declared", "/huge-chunked"]) {
      expect((await failure(fetcher.fetch(`${site.origin}${path}`))).code).toBe("too_large");
    }
  });

  it("counts the cap after decompression, so a gzip bomb stops early", async () => {
    const err = await failure(fetcher.fetch(`${site.origin}/bomb`));
    expect(err.code).toBe("too_large");
  });

  it("decodes up to two encoding layers and refuses more", async () => {
    expect((await fetcher.fetch(`${site.origin}/gzip-twice`)).body.toString()).toBe("twice");
    expect((await fetcher.fetch(`${site.origin}/br`)).body.toString()).toBe("brotli");
    expect((await fetcher.fetch(`${site.origin}/deflate`)).body.toString()).toBe("deflated");
    for (const path of ["/gzip-thrice", "/zstd", "/corrupt"]) {
      expect((await failure(fetcher.fetch(`${site.origin}${path}`))).code).toBe(
        "unsupported_encoding",
      );
    }
  });

  it("stops a page that trickles bytes, or never answers, at the deadline", async () => {
    const quick = new SafeFetcher({ allowPrivate: true, timeoutMs: 300 });
    expect((await failure(quick.fetch(`${site.origin}/trickle`))).code).toBe("timeout");
    expect((await failure(quick.fetch(`${site.origin}/silent`))).code).toBe("timeout");
  });

  it("checks the content type against what the caller accepts", async () => {
    expect((await fetcher.fetch(`${site.origin}/file.pdf`)).kind).toBe("pdf");
    for (const path of ["/file.pdf", "/untyped", "/image.png"]) {
      const err = await failure(fetcher.fetch(`${site.origin}${path}`, { accept: PAGE_KINDS }));
      expect(err.code).toBe("unsupported_content_type");
    }
    expect((await failure(fetcher.fetch(`${site.origin}/image.png`))).code).toBe(
      "unsupported_content_type",
    );
  });

  it("posts a body once and answers any status with the start of the answer", async () => {
    const res = await fetcher.post(
      `${site.origin}/hook`,
      { headers: { "content-type": "application/json", "webhook-id": "msg_1" }, body: '{"a":1}' },
      { maxBytes: 100 },
    );
    expect(res.status).toBe(500);
    expect(res.body).toBe(`no: ${"x".repeat(96)}`);
    expect(posted?.method).toBe("POST");
    expect(posted?.headers["webhook-id"]).toBe("msg_1");
    expect(posted?.headers["user-agent"]).toBe(DEFAULT_USER_AGENT);
    expect(posted?.body.toString()).toBe('{"a":1}');
    const hops = () => site.requests.filter((r) => r === "/hop2").length;
    const before = hops();
    const moved = await fetcher.post(`${site.origin}/hop1`, { headers: {}, body: "" });
    expect(moved.status).toBe(302);
    expect(hops()).toBe(before);
    const quick = new SafeFetcher({ allowPrivate: true, timeoutMs: 300 });
    expect(
      (await failure(quick.post(`${site.origin}/trickle`, { headers: {}, body: "" }))).code,
    ).toBe("timeout");
  });

  it("names connection and DNS failures", async () => {
    const closed = await startSite();
    await closed.close();
    expect((await failure(fetcher.fetch(closed.origin))).code).toBe("connection_failed");
    const noDns = new SafeFetcher({
      allowPrivate: true,
      resolve: () => Promise.reject(Object.assign(new Error("nope"), { code: "ENOTFOUND" })),
    });
    expect(await failure(noDns.fetch("http://nowhere.example/"))).toMatchObject({
      code: "dns_failure",
      message: "nowhere.example could not be resolved",
    });
    const noAddress = new SafeFetcher({ allowPrivate: true, resolve: async () => [] });
    expect(await failure(noAddress.fetch("http://empty.example/"))).toMatchObject({
      code: "dns_failure",
      message: "empty.example has no address",
    });
  });
});
