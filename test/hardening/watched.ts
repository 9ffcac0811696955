import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { htmlPage, prose } from "../support/sites.js";

/**
 * A web server that should never be reached: it listens on one port of both loopback addresses
 * (127.0.0.1 and, where the host has IPv6, ::1) and records every connection, before any byte of
 * a request arrives, so a refused SSRF attempt is proven by `connections` staying empty.
 */
export interface WatchedSite {
  port: number;
  /** Whether ::1 is watched too (the host may have no IPv6 loopback). */
  ipv6: boolean;
  /** The remote address of each connection accepted. */
  connections: string[];
  close(): Promise<void>;
}

function serve(): Server {
  return createServer((_req, res) => {
    // Were it ever reached, it would look worth indexing and linking onwards.
    res
      .writeHead(200, { "content-type": "text/html; charset=utf-8" })
      .end(
        htmlPage("Internal admin", `<h1>Internal admin</h1>${prose("Secret")}<a href="/a">a</a>`),
      );
  });
}

const listen = (server: Server, port: number, host: string) =>
  new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, host, () => resolve(true));
  });

export async function startWatchedSite(): Promise<WatchedSite> {
  const connections: string[] = [];
  const v4 = serve();
  const v6 = serve();
  for (const server of [v4, v6]) {
    server.on("connection", (socket) => connections.push(socket.remoteAddress ?? "?"));
  }
  await listen(v4, 0, "127.0.0.1");
  const { port } = v4.address() as AddressInfo;
  const ipv6 = await listen(v6, port, "::1");
  const close = (server: Server) =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    port,
    ipv6,
    connections,
    close: async () => {
      await Promise.all([close(v4), close(v6)]);
    },
  };
}
