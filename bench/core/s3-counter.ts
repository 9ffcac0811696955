import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP proxy on 127.0.0.1 in front of an S3 endpoint (the S3 emulator) that counts what passes:
 * requests by kind and bytes each way, per area of the bucket (the first segment of the key, so
 * `search` is the search index and the rest is the service's own objects). The local runtime gives
 * its address to the service and the engine as their S3 endpoint (`startLocal`'s `s3Endpoint`),
 * so every request the service makes is counted. A figure reads and resets the tally around each
 * measured operation, in this process or over HTTP from another one (`readS3Counter`).
 */

export const S3_REQUEST_KINDS = [
  "get",
  "rangedGet",
  "head",
  "list",
  "put",
  "post",
  "delete",
] as const;
export type S3RequestKind = (typeof S3_REQUEST_KINDS)[number];

export interface KindCount {
  requests: number;
  /** Body bytes sent to S3 (an object written). */
  bytesSent: number;
  /** Body bytes received from S3 (an object or a listing read). */
  bytesReceived: number;
}

/** The tally: area → kind → counts. */
export type S3Tally = Record<string, Partial<Record<S3RequestKind, KindCount>>>;

/** The control path: no bucket name starts with `_`, so it is never an S3 request. */
const CONTROL_PATH = "/_counter";

/**
 * What an S3 request is, from its method, path-style URL and headers: a GET of a key is an object
 * read (ranged when it names a range), a GET of the bucket a listing; a POST starts or completes a
 * multipart upload, or deletes keys in bulk (`?delete`), which S3 prices as the free DELETE.
 */
export function requestKind(
  method: string,
  url: URL,
  headers: IncomingMessage["headers"],
): S3RequestKind {
  const hasKey = url.pathname.replace(/^\/[^/]*\/?/, "") !== "";
  switch (method) {
    case "GET":
      if (!hasKey) return "list";
      return headers.range ? "rangedGet" : "get";
    case "HEAD":
      return "head";
    case "PUT":
      return "put";
    case "DELETE":
      return "delete";
    default:
      return url.searchParams.has("delete") ? "delete" : "post";
  }
}

/** The first segment of the request's key (or of a listing's prefix); `` for the bucket itself. */
export function requestArea(url: URL): string {
  const key = decodeURIComponent(url.pathname.replace(/^\/[^/]*\/?/, ""));
  return (key || url.searchParams.get("prefix") || "").split("/")[0] ?? "";
}

export interface S3Counter {
  endpoint: string;
  /** The tally since the last reset. */
  tally(): S3Tally;
  reset(): void;
  close(): Promise<void>;
}

/** Starts the counting proxy in front of `upstream` (an `http://host:port` S3 endpoint). */
export async function startS3Counter(upstream: string): Promise<S3Counter> {
  const target = new URL(upstream);
  let tally: S3Tally = {};
  const countOf = (area: string, kind: S3RequestKind): KindCount => {
    tally[area] ??= {};
    const byKind = tally[area];
    byKind[kind] ??= { requests: 0, bytesSent: 0, bytesReceived: 0 };
    return byKind[kind];
  };

  const control = (url: URL, res: ServerResponse) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(tally));
    if (url.searchParams.has("reset")) tally = {};
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://s3");
    if (url.pathname === CONTROL_PATH) return control(url, res);
    const kind = requestKind(req.method ?? "GET", url, req.headers);
    // A bulk delete names its keys in the body: its area is that of its first key.
    let area = requestArea(url);
    const bulkDelete = kind === "delete" && req.method === "POST";
    let sent = 0;
    let head = "";
    req.on("data", (part: Buffer) => {
      sent += part.length;
      if (bulkDelete && head.length < 4096) head += part.toString();
    });
    const upstreamRequest = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        if (bulkDelete) {
          const key = /<Key>([^<]*)<\/Key>/.exec(head)?.[1];
          if (key) area = key.split("/")[0] ?? "";
        }
        const count = countOf(area, kind);
        count.requests++;
        count.bytesSent += sent;
        answer.on("data", (part: Buffer) => {
          count.bytesReceived += part.length;
        });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstreamRequest.on("error", () => res.destroy());
    res.on("close", () => upstreamRequest.destroy());
    req.pipe(upstreamRequest);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tally: () => tally,
    reset() {
      tally = {};
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The tally of a counter in another process, reset after reading when `reset` is set. */
export async function readS3Counter(endpoint: string, reset = false): Promise<S3Tally> {
  const response = await fetch(`${endpoint}${CONTROL_PATH}${reset ? "?reset" : ""}`);
  if (!response.ok) throw new Error(`the S3 counter answered ${response.status}`);
  return (await response.json()) as S3Tally;
}

/** Requests and bytes of a tally by kind, over every area or the ones `areas` names. */
export function totals(tally: S3Tally, areas?: string[]): Record<S3RequestKind, KindCount> {
  const sum = Object.fromEntries(
    S3_REQUEST_KINDS.map((kind) => [kind, { requests: 0, bytesSent: 0, bytesReceived: 0 }]),
  ) as Record<S3RequestKind, KindCount>;
  for (const [area, byKind] of Object.entries(tally)) {
    if (areas && !areas.includes(area)) continue;
    for (const kind of S3_REQUEST_KINDS) {
      const count = byKind[kind];
      if (!count) continue;
      sum[kind].requests += count.requests;
      sum[kind].bytesSent += count.bytesSent;
      sum[kind].bytesReceived += count.bytesReceived;
    }
  }
  return sum;
}

export const requestCount = (byKind: Record<S3RequestKind, KindCount>): number =>
  S3_REQUEST_KINDS.reduce((n, kind) => n + byKind[kind].requests, 0);

/** Object reads, in the sense of issue 27's bounds: whole or ranged GETs, and HEADs. */
export const readCount = (byKind: Record<S3RequestKind, KindCount>): number =>
  byKind.get.requests + byKind.rangedGet.requests + byKind.head.requests;

/**
 * S3 Standard list prices in us-east-1, in dollars: PUT, COPY, POST and LIST $0.005 per 1,000;
 * GET, HEAD and the other reads $0.0004 per 1,000; DELETE free; storage $0.023 per GB-month.
 */
export const S3_PRICES = {
  writeTierPerThousand: 0.005,
  readTierPerThousand: 0.0004,
  storagePerGbMonth: 0.023,
} as const;

/** What the requests of a tally cost at `S3_PRICES`, in dollars. */
export function requestCost(byKind: Record<S3RequestKind, KindCount>): number {
  const writeTier = byKind.put.requests + byKind.post.requests + byKind.list.requests;
  return (
    (writeTier * S3_PRICES.writeTierPerThousand +
      readCount(byKind) * S3_PRICES.readTierPerThousand) /
    1000
  );
}
