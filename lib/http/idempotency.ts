import { createHash, randomUUID } from "node:crypto";
import type { RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { DomainError } from "../errors.js";
import { logger } from "../log.js";
import { and, atMost, type Condition, equals, or } from "../store/conditions.js";
import { type Item, type Table, wsKey } from "../store/table.js";
import type { AppEnv, Module } from "./app.js";
import { IdempotencyHeaders } from "./schemas.js";

/** How long a key answers with its first answer. */
export const IDEMPOTENCY_WINDOW_SECONDS = 24 * 3600;

/**
 * How long a request being answered holds its key: longer than any API function may run (API
 * Gateway gives up after 29 s), so that the key of a request whose function crashed is free again.
 */
export const IDEMPOTENCY_HOLD_SECONDS = 60;

/** The stored first answer of a key. */
export interface StoredAnswer {
  status: number;
  body: string;
  contentType: string;
}

interface KeyItem extends Item, Partial<StoredAnswer> {
  state: "running" | "done";
  fingerprint: string;
  holder: string;
  heldUntil: number;
  expiresAt: number;
}

export type Claim =
  | { kind: "claimed"; holder: string }
  | { kind: "done"; answer: StoredAnswer }
  | { kind: "running" }
  | { kind: "reused" };

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * A key a request with `fingerprint` may claim at `now` (epoch seconds): its window is over, or
 * the same request holds it running but stopped answering.
 */
const free = (now: number, fingerprint: string): Condition =>
  or(
    atMost("expiresAt", now),
    and(equals("state", "running"), atMost("heldUntil", now), equals("fingerprint", fingerprint)),
  );

/**
 * Idempotency keys in the table, one item per workspace and key (the key hashed), each written
 * with one conditional write: the first request claims the key, a retry finds the first answer.
 */
export class IdempotencyKeys {
  constructor(private readonly table: Table) {}

  private where(workspaceId: string, key: string) {
    const hashed = createHash("sha256").update(key).digest("hex");
    return [wsKey(workspaceId), `IDEMPOTENCY#${hashed}`] as const;
  }

  /**
   * Claims a key for a request whose body has `fingerprint`. The key is free when it was never
   * used, its window is over, or its holder let it go or stopped answering (the same request only).
   */
  async claim(workspaceId: string, key: string, fingerprint: string): Promise<Claim> {
    const [pk, sk] = this.where(workspaceId, key);
    const holder = randomUUID();
    // A key released between the failed claim and the read is claimed again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = nowSeconds();
      const claimed = await this.table.change<KeyItem>(pk, sk, {
        upsert: true,
        set: {
          state: "running",
          fingerprint,
          holder,
          heldUntil: now + IDEMPOTENCY_HOLD_SECONDS,
          expiresAt: now + IDEMPOTENCY_WINDOW_SECONDS,
        },
        remove: ["status", "body", "contentType"],
        condition: free(now, fingerprint),
      });
      if (claimed) return { kind: "claimed", holder };
      const found = await this.table.get<KeyItem>(pk, sk);
      if (!found) continue;
      if (found.fingerprint !== fingerprint) return { kind: "reused" };
      if (found.state === "running") return { kind: "running" };
      const { status = 200, body = "", contentType = "application/json" } = found;
      return { kind: "done", answer: { status, body, contentType } };
    }
    return { kind: "running" };
  }

  /** Keeps the answer of the request holding the key, for the rest of the key's window. */
  async complete(workspaceId: string, key: string, holder: string, answer: StoredAnswer) {
    const [pk, sk] = this.where(workspaceId, key);
    await this.table.update(pk, sk, { state: "done", ...answer }, this.heldBy(holder));
  }

  /** Lets the key go after a failed answer, so that the request can be tried again with it. */
  async release(workspaceId: string, key: string, holder: string) {
    const [pk, sk] = this.where(workspaceId, key);
    await this.table.delete(pk, sk, this.heldBy(holder));
  }

  private heldBy(holder: string): Condition {
    return equals("holder", holder);
  }
}

/** What a request's body says, whatever its framing: a multipart body's fields and files, or its bytes. */
async function fingerprint(c: Context<AppEnv>): Promise<string> {
  const hash = createHash("sha256").update(`${c.req.method} ${c.req.path}\n`);
  if (/^multipart\/form-data/i.test(c.req.header("content-type") ?? "")) {
    // The boundary differs from one attempt to the next; the parts do not.
    const form = await c.req.formData().catch(() => undefined);
    if (form) {
      for (const [name, value] of form.entries()) {
        if (typeof value === "string") {
          hash.update(JSON.stringify([name, value]));
        } else {
          hash.update(JSON.stringify([name, value.name, value.type, value.size]));
          hash.update(new Uint8Array(await value.arrayBuffer()));
        }
      }
      return hash.digest("hex");
    }
  }
  return hash.update(new Uint8Array(await c.req.arrayBuffer())).digest("hex");
}

const replay = (answer: StoredAnswer) =>
  new Response(answer.body, {
    status: answer.status,
    headers: { "Content-Type": answer.contentType, "Idempotent-Replayed": "true" },
  });

/**
 * Has an idempotent replay of this request answer `body` (JSON) instead of the answer itself:
 * for an answer that shows something once only, such as a webhook's signing secret, which a
 * replay must not show again (nor keep in the table for the key's 24 hours). The status and
 * content type stay the answer's.
 */
export function keepForReplay(c: Context<AppEnv>, body: unknown): void {
  c.set("replayBody", JSON.stringify(body));
}

const isKey = (key: string) => IdempotencyHeaders.shape["idempotency-key"].safeParse(key).success;

/** The routes of modules that declare the `Idempotency-Key` header, as `METHOD path` patterns. */
function idempotentRoutes(modules: Module[]): Array<{ method: string; path: RegExp }> {
  return modules
    .flatMap((module) => module.openAPIRegistry.definitions)
    .flatMap((definition) => (definition.type === "route" ? [definition.route] : []))
    .filter((route: RouteConfig) => route.request?.headers === IdempotencyHeaders)
    .map((route) => ({
      method: route.method.toUpperCase(),
      path: new RegExp(`^${route.path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    }));
}

/**
 * Makes the create routes safe to retry: a request with an `Idempotency-Key` claims the key for
 * its workspace; a 2xx answer is kept for 24 hours and given again to a request with the same
 * key and body (`Idempotent-Replayed: true`), less what the route showed once only
 * (`keepForReplay`); any other answer lets the key go. The same key
 * with another body or route is a 422, and while the first request is being answered a 409.
 */
export function idempotentCreates(
  keys: IdempotencyKeys,
  modules: Module[],
): MiddlewareHandler<AppEnv> {
  const routes = idempotentRoutes(modules);
  return async (c, next) => {
    const key = c.req.header("idempotency-key");
    const method = c.req.method;
    const path = c.req.path;
    // A malformed key reaches the route, whose header validation answers 400.
    if (!key || !isKey(key) || !routes.some((r) => r.method === method && r.path.test(path))) {
      return next();
    }
    const workspaceId = c.get("workspaceId");
    const claim = await keys.claim(workspaceId, key, await fingerprint(c));
    if (claim.kind === "done") return replay(claim.answer);
    if (claim.kind === "reused") {
      throw new DomainError(
        "idempotency_key_reused",
        "This Idempotency-Key was used with another request in the last 24 hours; use a new key for a new request",
      );
    }
    if (claim.kind === "running") {
      throw new DomainError(
        "idempotency_key_in_use",
        "A request with this Idempotency-Key is still being answered; retry shortly",
        { retryAfterSeconds: 1 },
      );
    }
    await next();
    const res = c.res;
    try {
      if (res.status >= 200 && res.status < 300) {
        await keys.complete(workspaceId, key, claim.holder, {
          status: res.status,
          body: c.get("replayBody") ?? (await res.clone().text()),
          contentType: res.headers.get("content-type") ?? "application/json",
        });
      } else {
        await keys.release(workspaceId, key, claim.holder);
      }
    } catch (error) {
      // The answer stands; until the hold ends, a retry is told the request is in progress.
      logger.error("idempotency key not settled", { requestId: c.get("requestId"), error });
    }
  };
}
