import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../../lib/auth/keys.js";
import { VIEWER_FILE } from "../../lib/http/docs.js";
import { candidateBodies, seedOneOfEach } from "./fixtures.js";
import { type Answer, errorBodyOf, type RawRequest, send } from "./probe.js";
import { type Hardened, startHardened } from "./runtime.js";
import { changes, runtimeStores, type StoreSnapshot, snapshot } from "./store.js";
import { type ApiRoute, apiRoutes, fillPath, surface } from "./surface.js";

/**
 * The auth matrix: every /api route of the manifest, aimed at real resources with a valid body,
 * and every way of not holding a valid key in the Authorization header. All of them get the very
 * same 401 (body and WWW-Authenticate), and none of them does anything.
 */

let h: Hardened;
let ids: Record<string, string[]>;
/** Used once, then revoked: proves revocation reaches a key the service has already seen. */
let revokedAfterUse: string;
let revokedUnused: string;
let keyId: string;
let before: StoreSnapshot;

beforeAll(async () => {
  // No key cache: a revoked key stops working at once (with a cache it takes KEY_CACHE_SECONDS).
  h = await startHardened({ env: { KEY_CACHE_SECONDS: "0" } });
  const { keys, workspaceId } = h.rt.runtime;
  ids = await seedOneOfEach(h.rt, runtimeStores().table, workspaceId, h.rt.key);

  const used = await keys.createKey(workspaceId, "used then revoked");
  const seen = await h.rt.call("/api/knowledge", { key: used.key });
  expect(seen.status).toBe(200);
  await keys.revokeKey(used.info.keyId);
  revokedAfterUse = used.key;
  const unused = await keys.createKey(workspaceId, "revoked unused");
  await keys.revokeKey(unused.info.keyId);
  revokedUnused = unused.key;
  keyId = used.info.keyId;
  before = await snapshot(runtimeStores());
});
afterAll(() => h.close());

interface Attempt {
  name: string;
  headers?: Record<string, string | string[]>;
  query?: string;
}

/** Every way of coming without a valid key in `Authorization: Bearer`. */
function attempts(): Attempt[] {
  const key = h.rt.key;
  const bearer = (value: string, name: string): Attempt => ({
    name,
    headers: { authorization: value },
  });
  return [
    { name: "no Authorization header" },
    bearer("", "an empty Authorization header"),
    bearer("Bearer", "the scheme alone"),
    bearer("Bearer ", "the scheme and a space"),
    bearer(`Basic ${Buffer.from(`${key}:`).toString("base64")}`, "Basic credentials"),
    bearer(`Token ${key}`, "another scheme"),
    bearer(key, "the key without a scheme"),
    bearer(`Bearer ${key} extra`, "the key and trailing words"),
    bearer(`Bearer "${key}"`, "the key in quotes"),
    bearer(`Bearer\t${key}`, "a tab after the scheme"),
    bearer(`Bearer ${key.slice(0, -1)}`, "the key less its last character"),
    bearer(`Bearer ${key}x`, "the key and one more character"),
    bearer(`Bearer ${key.toUpperCase()}`, "the key in upper case"),
    bearer(`Bearer ${key}, Bearer ${key}`, "the key twice in one header"),
    {
      name: "two Authorization headers",
      headers: { authorization: ["Bearer nope", `Bearer ${key}`] },
    },
    bearer("Bearer kbi_unknownunknownunknownunknown", "an unknown, well-formed key"),
    bearer(`Bearer ${revokedAfterUse}`, "a key revoked after use"),
    bearer(`Bearer ${revokedUnused}`, "a key revoked before use"),
    bearer(`Bearer ${hashKey(key)}`, "the stored hash of the key"),
    bearer(`Bearer ${keyId}`, "a key id"),
    bearer(`Bearer ${h.rt.runtime.workspaceId}`, "the workspace id"),
    bearer(`Bearer ${"k".repeat(257)}`, "a key longer than any key"),
    bearer(`Bearer ${"k".repeat(6000)}`, "a 6 KB key"),
    bearer("Bearer kbi_\u00e9\u00e8\u00ea\u00eb_latin1_latin1_latin1", "a key with Latin-1 bytes"),
    bearer("Bearer ../../../../etc/passwd", "path traversal"),
    bearer("Bearer ' OR '1'='1", "an injection"),
    { name: "x-api-key", headers: { "x-api-key": key } },
    { name: "api-key", headers: { "api-key": key } },
    { name: "x-amz-apigw-key", headers: { "x-api-key": key, "x-amz-apigw-key": key } },
    { name: "an api_key cookie", headers: { cookie: `api_key=${key}` } },
    { name: "an authorization cookie", headers: { cookie: `authorization=Bearer%20${key}` } },
    { name: "Proxy-Authorization", headers: { "proxy-authorization": `Bearer ${key}` } },
    { name: "?api_key=", query: `api_key=${key}` },
    { name: "?key=", query: `key=${key}` },
    { name: "?access_token=", query: `access_token=${key}` },
    { name: "?authorization=", query: `authorization=${encodeURIComponent(`Bearer ${key}`)}` },
  ];
}

/** The route aimed at the workspace's real resources, with a body it would accept. */
function requestFor(route: ApiRoute, attempt: Attempt, key: string | null): RawRequest {
  const path = fillPath(
    route,
    Object.fromEntries(route.params.map((p) => [p.name, resolveParam(p.idPrefix, p.schema.enum)])),
  );
  const [body] = candidateBodies(route.body);
  const query = attempt.query ? `${path.includes("?") ? "&" : "?"}${attempt.query}` : "";
  return {
    method: route.method,
    path: `${path}${query}`,
    key,
    headers: {
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...attempt.headers,
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  };
}

function resolveParam(prefix: string | undefined, accepted: unknown[] | undefined): string {
  if (prefix) return ids[prefix]?.[0] ?? `${prefix}missing`;
  return String(accepted?.[0] ?? "x");
}

function expectTheOne401(label: string, answer: Answer, reference: Answer) {
  expect(answer.status, `${label}: ${answer.text.slice(0, 300)}`).toBe(401);
  expect(errorBodyOf(label, answer), label).toEqual(errorBodyOf("reference", reference));
  expect(answer.headers.get("www-authenticate"), label).toBe(
    reference.headers.get("www-authenticate"),
  );
}

describe("the auth matrix", () => {
  it("has a reference 401: the unauthorized code and a Bearer challenge", async () => {
    const reference = await send(h.rt.url, { method: "GET", path: "/api/knowledge", key: null });
    expect(reference.status).toBe(401);
    expect(errorBodyOf("reference", reference).error.code).toBe("unauthorized");
    expect(reference.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it.each(apiRoutes.map((r) => [r.label, r] as const))(
    "%s answers every missing, malformed, unknown, revoked or misplaced key with the same 401",
    async (_label, route) => {
      const reference = await send(h.rt.url, { method: "GET", path: "/api/knowledge", key: null });
      for (const attempt of attempts()) {
        const answer = await send(h.rt.url, requestFor(route, attempt, null));
        expectTheOne401(`${route.label} with ${attempt.name}`, answer, reference);
      }
    },
  );

  it("refuses before reading the body: a hostile body without a key is the same 401", async () => {
    const reference = await send(h.rt.url, { method: "GET", path: "/api/knowledge", key: null });
    for (const route of apiRoutes.filter((r) => r.method !== "GET")) {
      for (const [type, body] of [
        ["application/json", "{not json"],
        ["text/plain", "plain"],
        ["application/json", JSON.stringify({ text: "x".repeat(3 * 1024 * 1024) })],
      ] as const) {
        const answer = await send(h.rt.url, {
          ...requestFor(route, { name: "the key" }, null),
          headers: { "content-type": type },
          body,
        });
        expectTheOne401(`${route.label} with ${type} ${body.slice(0, 20)}`, answer, reference);
      }
    }
  });

  it("did nothing for any of those requests", async () => {
    expect(changes(before, await snapshot(runtimeStores()))).toEqual([]);
  });

  it("lets the very same requests through with the workspace's key", async () => {
    // Last, since these act for real: the 401s above were about the key, not the request.
    for (const route of apiRoutes) {
      const answer = await send(h.rt.url, requestFor(route, { name: "the key" }, h.rt.key));
      expect(answer.status, `${route.label}: ${answer.text.slice(0, 300)}`).not.toBe(401);
      expect(answer.status, `${route.label}: ${answer.text.slice(0, 300)}`).toBeLessThan(500);
    }
  });

  it("serves only the API reference, the health check and the console without a key", async () => {
    const publicRoutes = surface.filter((r) => r.public);
    expect(publicRoutes.map((r) => r.path).sort()).toEqual([
      "/",
      "/console/app.css",
      "/console/app.js",
      "/docs",
      `/docs/${VIEWER_FILE}`,
      "/health",
      "/openapi.json",
    ]);
    for (const route of publicRoutes) {
      const answer = await send(h.rt.url, { method: "GET", path: route.path, key: null });
      expect(answer.status, route.path).toBe(200);
    }
  });
});
