import { createServer, type Server, type Socket } from "node:net";

/**
 * Servers on 127.0.0.1 that accept connections and never answer (a competitor's site, a webhook
 * endpoint that hangs); they count the connections open at once, and those the client gave up.
 */
export async function startHangingSites(count: number) {
  const open = new Set<Socket>();
  const state = { mostOpen: 0, opened: 0, closedByClient: 0, ending: false };
  /** Connections each site (by its index in `origins`) accepted. */
  const openedBySite = Array.from({ length: count }, () => 0);
  const servers: Server[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer((socket) => {
      open.add(socket);
      state.opened++;
      openedBySite[i] = (openedBySite[i] ?? 0) + 1;
      state.mostOpen = Math.max(state.mostOpen, open.size);
      socket.on("close", () => {
        open.delete(socket);
        if (!state.ending) state.closedByClient++;
      });
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
  }
  const origins = servers.map((s) => `http://127.0.0.1:${(s.address() as { port: number }).port}/`);
  return {
    origins,
    state,
    openedBySite,
    /** Connections open now: requests to these sites still waiting for an answer. */
    openNow: () => open.size,
    async close() {
      state.ending = true;
      for (const socket of open) socket.destroy();
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    },
  };
}
