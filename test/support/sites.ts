import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Fixture websites for fetch and crawl tests: a real HTTP server on 127.0.0.1 that serves routes
 * by path and records every request it receives, so a test can prove that no connection was made.
 */

export type Route = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

export interface Site {
  /** The origin, e.g. `http://127.0.0.1:41234`. */
  origin: string;
  port: number;
  /** Path and query of each request received, in order. */
  requests: string[];
  /** Adds or replaces the route of a path (without query). */
  route(path: string, route: Route): void;
  close(): Promise<void>;
}

export async function startSite(routes: Record<string, Route> = {}): Promise<Site> {
  const table = new Map(Object.entries(routes));
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://fixture");
    requests.push(`${url.pathname}${url.search}`);
    const route = table.get(url.pathname);
    if (!route) {
      res.writeHead(404, { "content-type": "text/html" }).end("<h1>Not found</h1>");
      return;
    }
    Promise.resolve(route(req, res, url)).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    route: (path, route) => table.set(path, route),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A small but readable HTML document. */
export function htmlPage(title: string, body: string, head = ""): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>${head}</head><body>${body}</body></html>`;
}

/** Paragraphs of filler prose, enough for Readability to treat a page as an article. */
export function prose(topic: string, paragraphs = 3): string {
  return Array.from(
    { length: paragraphs },
    (_, i) =>
      `<p>${topic} paragraph ${i + 1}: marketing teams keep their knowledge current by reading what they publish, and this sentence exists to give the page enough words to count as content.</p>`,
  ).join("");
}

/** Answers a fixed body with headers (HTML by default). */
export function respond(
  body: string | Buffer,
  headers: Record<string, string> = { "content-type": "text/html; charset=utf-8" },
  status = 200,
): Route {
  return (_req, res) => {
    res.writeHead(status, headers).end(body);
  };
}

export function redirect(location: string, status = 301): Route {
  return (_req, res) => {
    res.writeHead(status, { location }).end();
  };
}
