import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey, KeyStore } from "../../lib/auth/keys.js";
import { ensureDefaultWorkspace } from "../../lib/local/bootstrap.js";
import { startAws, type TestAws } from "../support/aws.js";

let aws: TestAws;
let keys: KeyStore;

beforeAll(async () => {
  aws = await startAws();
  keys = new KeyStore(aws.table, 0);
});
afterAll(() => aws.close());

describe("API keys", () => {
  it("stores only a hash of a key and resolves the key to its workspace", async () => {
    const ws = await keys.createWorkspace("Acme");
    const { key, info } = await keys.createKey(ws.id, "ci");
    expect(key).toMatch(/^kbi_[A-Za-z0-9_-]{32}$/);
    expect(await keys.verify(key)).toBe(ws.id);
    const item = await aws.table.get(`KEY#${hashKey(key)}`, "KEY");
    expect(JSON.stringify(item)).not.toContain(key);
    expect(info.prefix).toBe(key.slice(0, 8));
  });

  it("refuses revoked, unknown and malformed keys", async () => {
    const ws = await keys.createWorkspace("Revoked");
    const { key, info } = await keys.createKey(ws.id);
    expect(await keys.revokeKey(info.keyId)).toBe(true);
    expect(await keys.verify(key)).toBeNull();
    expect(await keys.verify("kbi_unknownunknownunknownunknownun")).toBeNull();
    expect(await keys.verify("short")).toBeNull();
    expect(await keys.verify("has spaces in it which is not allowed")).toBeNull();
    expect(await keys.revokeKey("key_01JD3Q8Y5V2N6W3KX9T7M4PZ8R")).toBe(false);
  });

  it("registers a chosen key idempotently, and never for two workspaces", async () => {
    const a = await keys.createWorkspace("A");
    const b = await keys.createWorkspace("B");
    const first = await keys.registerKey(a.id, "my-chosen-key-1234567890");
    const again = await keys.registerKey(a.id, "my-chosen-key-1234567890");
    expect(again.keyId).toBe(first.keyId);
    await expect(keys.registerKey(b.id, "my-chosen-key-1234567890")).rejects.toMatchObject({
      status: 409,
    });
  });

  it("caches verified keys for the configured time only", async () => {
    const cached = new KeyStore(aws.table, 60);
    const ws = await keys.createWorkspace("Cached");
    const { key, info } = await keys.createKey(ws.id);
    expect(await cached.verify(key)).toBe(ws.id);
    await keys.revokeKey(info.keyId);
    expect(await cached.verify(key)).toBe(ws.id);
    expect(await keys.verify(key)).toBeNull();
  });
});

describe("the local default workspace", () => {
  it("creates a key on the first start only, and registers API_KEY idempotently", async () => {
    const first = await ensureDefaultWorkspace(aws.table, keys);
    expect(first.newKey).toMatch(/^kbi_/);
    const second = await ensureDefaultWorkspace(aws.table, keys);
    expect(second).toEqual({ workspaceId: first.workspaceId });
    const withKey = await ensureDefaultWorkspace(aws.table, keys, "configured-key-0123456789");
    await ensureDefaultWorkspace(aws.table, keys, "configured-key-0123456789");
    expect(await keys.verify("configured-key-0123456789")).toBe(withKey.workspaceId);
    expect(withKey.workspaceId).toBe(first.workspaceId);
  });
});
