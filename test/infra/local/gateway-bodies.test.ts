import type { AddressInfo, Socket } from "node:net";
import { connect } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { createRoute, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localGateway } from "../../../infra/local/gateway.js";
import { DomainError } from "../../../lib/errors.js";
import {
  type AppEnv,
  createModule,
  createServiceApp,
  DEFAULT_BODY_LIMIT,
} from "../../../lib/http/app.js";
import { jsonBody } from "../../../lib/http/schemas.js";

/**
 * The local gateway over raw HTTP, served as the local runtime serves it: a body is read only by
 * a function that wants it, after the key check, and never past a limit. What the server read off
 * each connection is measured on its socket.
 */

const KEY = "good-key-0123456789";
const MiB = 1024 * 1024;

const keyCheck: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header("authorization") !== `Bearer ${KEY}`) {
    throw new DomainError("unauthorized", "A valid API key is required");
  }
  c.set("workspaceId", "ws_gateway");
  await next();
};

function echoApp() {
  const module = createModule();
  module.openapi(
    createRoute({
      method: "post",
      path: "/api/echo",
      // A route reads only the body it declares (lib/http/app.ts refuses one it does not).
      request: { body: jsonBody(z.looseObject({})) },
      responses: { 200: { description: "the body's length" } },
    }),
    async (c) => c.json({ length: JSON.stringify(await c.req.json()).length }, 200),
  );
  return createServiceApp({ authenticate: keyCheck, modules: [module] });
}

let server: ServerType;
let port: number;
/** Bytes the server read off each connection, by the client's port, recorded when it closes. */
const readOff = new Map<number, number>();

beforeAll(async () => {
  const gateway = localGateway([echoApp()]);
  server = serve({ fetch: gateway.fetch, port: 0, hostname: "127.0.0.1" });
  server.on("connection", (socket: Socket) => {
    const client = socket.remotePort ?? 0;
    socket.on("close", () => readOff.set(client, socket.bytesRead));
  });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface RawAnswer {
  status: number;
  head: string;
  /** Whether the server closed the connection after answering. */
  closed: boolean;
  /** What the server read off this connection. */
  bytesRead: number;
}

/**
 * One request on a fresh connection: the head, then `body` (streamed in 64 KiB writes until the
 * server answers or it is all sent). Fails when no answer comes within two seconds.
 */
function raw(head: string[], body?: { bytes: number; chunked?: boolean }): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let client = 0;
    socket.on("connect", () => {
      client = socket.localPort ?? 0;
    });
    let received = "";
    let answered = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within 2 s (got ${JSON.stringify(received.slice(0, 80))})`));
    }, 2000);
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
      // The server's side of the connection closes a moment after ours.
      const settle = async () => {
        for (let i = 0; i < 100 && !readOff.has(client); i++) {
          await new Promise((wait) => setTimeout(wait, 10));
        }
        resolve({ status, head: received, closed, bytesRead: readOff.get(client) ?? Infinity });
      };
      void settle();
    };
    socket.on("data", (data) => {
      received += data.toString("latin1");
      if (!answered && received.includes("\r\n\r\n")) {
        answered = true;
        if (!/connection: close/i.test(received)) {
          finish(false);
          socket.destroy();
        }
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      if (answered) finish(true);
    });
    socket.write(`${head.join("\r\n")}\r\n\r\n`);
    if (!body) return;
    const piece = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (sent < body.bytes && !answered && !socket.destroyed) {
        sent += piece.length;
        const frame = body.chunked
          ? Buffer.concat([
              Buffer.from(`${piece.length.toString(16)}\r\n`),
              piece,
              Buffer.from("\r\n"),
            ])
          : piece;
        if (!socket.write(frame)) return socket.once("drain", pump);
      }
      if (body.chunked && sent >= body.bytes && !socket.destroyed) socket.write("0\r\n\r\n");
    };
    pump();
  });
}

const post = (headers: string[]) => [
  "POST /api/echo HTTP/1.1",
  "Host: 127.0.0.1",
  "Content-Type: application/json",
  ...headers,
];

describe("the local gateway and request bodies", () => {
  it("answers 413 from a declared length over the limit, before the key or the body", async () => {
    const answer = await raw(post([`Content-Length: ${100 * MiB}`]));
    expect(answer.status).toBe(413);
    expect(answer.head).toContain('"code":"payload_too_large"');
    expect(answer.closed).toBe(true);
    expect(answer.bytesRead).toBeLessThan(1024);
  });

  it("answers 413 from a declared length over the route's limit, without waiting for the body", async () => {
    const declared = DEFAULT_BODY_LIMIT + 1;
    const answer = await raw(post([`Authorization: Bearer ${KEY}`, `Content-Length: ${declared}`]));
    expect(answer.status).toBe(413);
    expect(answer.closed).toBe(true);
    expect(answer.bytesRead).toBeLessThan(1024);
  });

  it("answers a missing or wrong key with 401 before reading the body", async () => {
    for (const auth of [[], ["Authorization: Bearer wrong-key-0123456789"]]) {
      const answer = await raw(post([...auth, `Content-Length: ${MiB}`]));
      expect(answer.status).toBe(401);
      expect(answer.closed).toBe(true);
    }
  });

  it("reads almost nothing of a body sent along with a wrong key", async () => {
    const answer = await raw(post(["Authorization: Bearer wrong", `Content-Length: ${3 * MiB}`]), {
      bytes: 3 * MiB,
    });
    expect(answer.status).toBe(401);
    expect(answer.closed).toBe(true);
    expect(answer.bytesRead).toBeLessThan(MiB);
  });

  it("cuts a chunked body at the route's limit while it streams", async () => {
    const answer = await raw(post([`Authorization: Bearer ${KEY}`, "Transfer-Encoding: chunked"]), {
      bytes: 64 * MiB,
      chunked: true,
    });
    expect(answer.status).toBe(413);
    expect(answer.closed).toBe(true);
    expect(answer.bytesRead).toBeLessThan(DEFAULT_BODY_LIMIT + MiB);
  });

  it("still reads bodies within the limit, and keeps the connection", async () => {
    const json = JSON.stringify({ text: "x".repeat(100_000) });
    const answer = await fetch(`http://127.0.0.1:${port}/api/echo`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: json,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("connection")).not.toBe("close");
    expect(await answer.json()).toEqual({ length: json.length });
  });
});
