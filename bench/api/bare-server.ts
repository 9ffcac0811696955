import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";

/**
 * The floor of figure 2: a bare Hono app on the same node-server adapter the local runtime uses,
 * answering a GET with a small JSON body and a POST by parsing its JSON body.
 */
export async function startBareServer() {
  const app = new Hono();
  app.get("/hello", (c) => c.json({ hello: "world" }));
  app.post("/echo", async (c) => c.json({ fields: Object.keys(await c.req.json()).length }));
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
