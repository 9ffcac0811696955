import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { startSite } from "./sites.js";

/**
 * A webhook receiver on 127.0.0.1: it records every delivery (headers, raw body, arrival time)
 * and answers the statuses it is told, in turn (200 once they run out).
 */

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** Verifies a Standard Webhooks signature, as the receiver of docs/webhooks.md does. */
export function verify(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig } = headers;
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false; // replayed or stale
  const key = Buffer.from(secret.split("_")[1] ?? "", "base64");
  const expected = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest();
  return String(sig)
    .split(" ")
    .some((s) => {
      const given = Buffer.from(s.slice(3), "base64");
      return s.startsWith("v1,") && given.length === 32 && timingSafeEqual(given, expected);
    });
}

export async function startReceiver() {
  const received: Received[] = [];
  const statuses: number[] = [];
  const waiters: Array<() => void> = [];
  const site = await startSite({
    "/hook": (req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (part: Buffer) => parts.push(part));
      req.on("end", () => {
        received.push({
          headers: req.headers,
          body: Buffer.concat(parts).toString("utf8"),
          at: Date.now(),
        });
        const status = statuses.shift() ?? 200;
        res.writeHead(status, { "content-type": "text/plain" }).end(`answered ${status}`);
        for (const wake of waiters.splice(0)) wake();
      });
    },
  });
  return {
    url: `${site.origin}/hook`,
    received,
    /** Statuses of the next answers, in order. */
    answer: (...next: number[]) => statuses.push(...next),
    /** Resolves once `count` deliveries arrived (rejects after `timeoutMs`). */
    async waitFor(count: number, timeoutMs = 20_000): Promise<Received[]> {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`${received.length} of ${count} deliveries arrived in ${timeoutMs} ms`);
        }
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
      return received.slice(0, count);
    },
    close: () => site.close(),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A delivery's JSON body. */
export const payload = (r: Received) =>
  JSON.parse(r.body) as { type: string; timestamp: string; data: Record<string, unknown> };
