import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ensureDefaultWorkspace } from "../../infra/local/bootstrap.js";
import { hashKey, KeyStore } from "../../lib/auth/keys.js";
import { Table } from "../../lib/store/table.js";
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
    // No cache time: a key verified a moment ago stops at once when revoked.
    expect(await keys.verify(key)).toBe(ws.id);
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
      code: "conflict",
    });
  });

  it("caches verified keys for the configured time only", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const cached = new KeyStore(aws.table, 60);
      const ws = await keys.createWorkspace("Cached");
      const { key, info } = await keys.createKey(ws.id);
      expect(await cached.verify(key)).toBe(ws.id);
      await keys.revokeKey(info.keyId);
      vi.advanceTimersByTime(60_000);
      expect(await cached.verify(key)).toBe(ws.id);
      expect(await keys.verify(key)).toBeNull();
      vi.advanceTimersByTime(1);
      expect(await cached.verify(key)).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });

  it("forgets the least recently used key once the cache is full, not every key", async () => {
    const cached = new KeyStore(aws.table, 60, 2);
    const ws = await keys.createWorkspace("Full cache");
    const [a, b] = [await keys.createKey(ws.id), await keys.createKey(ws.id)];
    expect(await cached.verify(a.key)).toBe(ws.id);
    expect(await cached.verify(b.key)).toBe(ws.id);
    await keys.revokeKey(a.info.keyId);
    await keys.revokeKey(b.info.keyId);
    // Both are served from the cache; `a` is now the most recently used.
    expect(await cached.verify(b.key)).toBe(ws.id);
    expect(await cached.verify(a.key)).toBe(ws.id);
    // A made-up key takes the place of `b` alone.
    expect(await cached.verify("kbi_made-up-key-number-1-xxxxxxxx")).toBeNull();
    expect(await cached.verify(a.key)).toBe(ws.id);
    expect(await cached.verify(b.key)).toBeNull();
  });

  it("refuses a malformed key without reading the store", async () => {
    const nowhere = new Table(
      DynamoDBDocumentClient.from(
        new DynamoDBClient({
          endpoint: "http://127.0.0.1:9",
          region: "us-east-1",
          maxAttempts: 1,
          credentials: { accessKeyId: "x", secretAccessKey: "x" },
        }),
      ),
      "no-table",
    );
    const blind = new KeyStore(nowhere, 0);
    const valid = "a".repeat(16);
    await expect(blind.verify(valid)).rejects.toThrow();
    for (const malformed of [
      "a".repeat(15),
      "a".repeat(257),
      `${valid} `,
      ` ${valid}`,
      `has space ${valid}`,
      `${valid} trailing words`,
      `${valid}\n`,
      `${valid}"`,
    ]) {
      expect([malformed, await blind.verify(malformed)]).toEqual([malformed, null]);
    }
  });

  it("accepts keys of 16 to 256 URL-safe characters, and refuses others with a 400", async () => {
    const ws = await keys.createWorkspace("Lengths");
    for (const key of ["k".repeat(16), "K".repeat(256), "azAZ09._~+/=-azAZ09"]) {
      await keys.registerKey(ws.id, key);
      expect(await keys.verify(key)).toBe(ws.id);
    }
    for (const key of [
      "k".repeat(15),
      "k".repeat(257),
      `${"k".repeat(20)} x`,
      `${"k".repeat(20)}!`,
    ]) {
      await expect(keys.registerKey(ws.id, key)).rejects.toMatchObject({
        code: "validation_failed",
        message: expect.stringMatching(/16 to 256/),
      });
    }
  });

  it("lists workspaces and keys with their ids, labels and revocation", async () => {
    const ws = await keys.createWorkspace("Listed");
    expect(ws.id).toMatch(/^ws_/);
    expect(await keys.getWorkspace(ws.id)).toEqual(ws);
    expect(await keys.getWorkspace("ws_01JD3Q8Y5V2N6W3KX9T7M4PZ8R")).toBeUndefined();
    expect(await keys.listWorkspaces()).toContainEqual(ws);

    const created = await keys.createKey(ws.id);
    const chosen = await keys.registerKey(ws.id, "listed-chosen-key-0123456789");
    expect(created.info).toMatchObject({ label: "default", revokedAt: null });
    expect(created.info.keyId).toMatch(/^key_/);
    expect(chosen.label).toBe("default");
    await keys.revokeKey(created.info.keyId);
    const listed = (await keys.listKeys()).filter((k) => k.workspaceId === ws.id);
    expect(listed.map((k) => k.keyId).sort()).toEqual([created.info.keyId, chosen.keyId].sort());
    expect(listed.find((k) => k.keyId === chosen.keyId)?.revokedAt).toBeNull();
    expect(listed.find((k) => k.keyId === created.info.keyId)?.revokedAt).toMatch(
      /^\d{4}-\d\d-\d\dT/,
    );
  });

  it("registers one key raced from many requests once: one id, one listing", async () => {
    const ws = await keys.createWorkspace("Raced");
    const key = "raced-key-0123456789-abcdef";
    const infos = await Promise.all(Array.from({ length: 8 }, () => keys.registerKey(ws.id, key)));
    expect(new Set(infos.map((i) => i.keyId)).size).toBe(1);
    const listed = (await keys.listKeys()).filter((k) => k.workspaceId === ws.id);
    expect(listed.map((k) => k.keyId)).toEqual([infos[0]?.keyId]);
  });

  it("gives a key raced between two workspaces to one of them only", async () => {
    const [a, b] = await Promise.all([keys.createWorkspace("A"), keys.createWorkspace("B")]);
    const key = "contested-key-0123456789-abcdef";
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => keys.registerKey((i % 2 ? a : b).id, key)),
    );
    const owner = await keys.verify(key);
    const refused = outcomes.filter((o) => o.status === "rejected").map((o) => o.reason);
    expect(refused).toHaveLength(4);
    for (const err of refused) {
      expect(err).toMatchObject({
        code: "conflict",
        message: expect.stringMatching(/another workspace/),
      });
    }
    const listed = (await keys.listKeys()).filter((k) => k.prefix === key.slice(0, 8));
    expect(listed.map((k) => k.workspaceId)).toEqual([owner]);
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
