import { createRoute } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyStore } from "../../lib/auth/keys.js";
import { createModule, createServiceApp } from "../../lib/http/app.js";
import { bearerAuth, denyAll } from "../../lib/http/auth.js";
import { startAws, type TestAws } from "../support/aws.js";

/** `bearerAuth` in the service app, over a real key store: what every /api route stands behind. */

let aws: TestAws;
let key: string;
let workspaceId: string;

function whoAmI() {
  const module = createModule();
  module.openapi(
    createRoute({ method: "get", path: "/api/me", responses: { 200: { description: "me" } } }),
    (c) => c.json({ workspaceId: c.get("workspaceId") }, 200),
  );
  return module;
}

beforeAll(async () => {
  aws = await startAws();
  const keys = new KeyStore(aws.table, 0);
  workspaceId = (await keys.createWorkspace("Auth")).id;
  key = (await keys.createKey(workspaceId)).key;
});
afterAll(() => aws.close());

const guarded = () =>
  createServiceApp({ authenticate: bearerAuth(new KeyStore(aws.table, 0)), modules: [whoAmI()] });

async function expectUnauthorized(res: Response) {
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe('Bearer realm="api"');
  expect(await res.json()).toEqual({
    error: {
      code: "unauthorized",
      message: "A valid API key is required: Authorization: Bearer <key>",
    },
  });
}

describe("bearerAuth", () => {
  it("resolves the workspace from the key, whatever the case of the scheme or spaces around", async () => {
    const app = guarded();
    for (const header of [`Bearer ${key}`, `bearer ${key}`, `BEARER ${key}`, `  Bearer ${key}  `]) {
      const res = await app.request("/api/me", { headers: { authorization: header } });
      expect([header, res.status]).toEqual([header, 200]);
      expect(await res.json()).toEqual({ workspaceId });
    }
  });

  it("answers the same 401 to every header that is not exactly one bearer key", async () => {
    const app = guarded();
    const headers = [
      undefined,
      "",
      "Bearer",
      "Bearer ",
      key,
      `Token ${key}`,
      `Basic Bearer ${key}`,
      `Bearer ${key} extra`,
      `Bearer  ${key}`,
      `Bearer\t${key}`,
      `Bearer ${key}x`,
      "Bearer kbi_unknownunknownunknownunknown",
    ];
    for (const header of headers) {
      const res = await app.request("/api/me", {
        headers: header === undefined ? {} : { authorization: header },
      });
      await expectUnauthorized(res);
    }
  });

  it("ignores a key anywhere but the Authorization header", async () => {
    const app = guarded();
    await expectUnauthorized(await app.request(`/api/me?key=${key}&api_key=${key}`));
    await expectUnauthorized(await app.request("/api/me", { headers: { "x-api-key": key } }));
  });
});

describe("denyAll", () => {
  it("refuses every /api route like a bad key, even with a good one", async () => {
    const app = createServiceApp({ authenticate: denyAll, modules: [whoAmI()] });
    await expectUnauthorized(
      await app.request("/api/me", { headers: { authorization: `Bearer ${key}` } }),
    );
  });
});
