import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey, KeyStore } from "../../lib/auth/keys.js";
import { Competitors } from "../../lib/competitors/competitors.js";
import { Snapshots } from "../../lib/competitors/snapshot.js";
import { DynamoWriterLock, SearchIndex } from "../../lib/search/index.js";
import type { Blobs } from "../../lib/store/blobs.js";
import type { Stores } from "../../lib/store/clients.js";
import type { Table } from "../../lib/store/table.js";
import { type ErasureDeps, eraseWorkspace, remainsOf } from "../../lib/workspaces/erasure.js";
import { seedOneOfEach } from "../hardening/fixtures.js";
import { type Hardened, startHardened } from "../hardening/runtime.js";
import { runtimeStores } from "../hardening/store.js";

/**
 * Erasing a workspace (`npm run workspace -- delete`) against the in-process runtime's emulated
 * table, bucket and search index: afterwards nothing stored anywhere names the workspace (a scan
 * of the whole table, a listing of the whole bucket, the index's folder), its keys answer 401, a
 * workspace made again with the same id searches an empty index, and another workspace is as it
 * was. Erasing again changes nothing, and an erasure cut short at any step is finished by the
 * next run.
 */

let h: Hardened;
let stores: Stores;
let keys: KeyStore;
let searchDir: string;

const call = (path: string, init: RequestInit & { json?: unknown; key?: string | null } = {}) =>
  h.rt.call(path, init);

/** Runs the command in a process of its own, against the runtime's emulators (its environment). */
const workspaceCli = (...args: string[]) =>
  new Promise<{ stdout: string; stderr: string; status: number }>((resolve) => {
    execFile(
      "node_modules/.bin/tsx",
      ["infra/admin/workspace-cli.ts", ...args],
      { env: process.env, encoding: "utf8" },
      (error, stdout, stderr) =>
        resolve({ stdout, stderr, status: error ? Number(error.code ?? 1) : 0 }),
    );
  });

/** Every item of the table and every object key of the bucket, as text. */
async function everything(): Promise<{ items: string[]; objects: string[] }> {
  const items: string[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await stores.table.doc.send(
      new ScanCommand({ TableName: stores.table.name, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []).map((item) => JSON.stringify(item)));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  const objects: string[] = [];
  let token: string | undefined;
  do {
    const page = await stores.blobs.s3.send(
      new ListObjectsV2Command({ Bucket: stores.blobs.bucket, ContinuationToken: token }),
    );
    objects.push(...(page.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : [])));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return { items, objects };
}

/** What is stored that names the workspace (or a hash of one of its keys), anywhere. */
async function tracesOf(workspaceId: string, keyHashes: string[] = []) {
  const { items, objects } = await everything();
  const names = (text: string) =>
    text.includes(workspaceId) || keyHashes.some((hash) => text.includes(hash));
  return {
    items: items.filter(names),
    objects: objects.filter(names),
    searchIndex: existsSync(join(searchDir, workspaceId)),
  };
}

const NOTHING = { items: [], objects: [], searchIndex: false };

/** Everything stored that does not name the workspace, request counters left out. */
async function allBut(workspaceId: string) {
  const { items, objects } = await everything();
  return {
    items: items.filter((item) => !item.includes(workspaceId) && !item.includes('"RATE#')),
    objects: objects.filter((key) => !key.includes(workspaceId)),
  };
}

/**
 * A workspace with something in every place an erasure empties: two keys, a source indexed (its
 * content, chunks and vectors in the bucket, its rows in the search index), a crawl, a competitor
 * (its sweep entry) with a snapshot, an event, a brand, an artifact, a webhook, an export bundle
 * and a file left in the upload area.
 */
async function seedWorkspace(name: string): Promise<{ workspaceId: string; keys: string[] }> {
  const workspaceId = (await keys.createWorkspace(name)).id;
  const { key } = await keys.createKey(workspaceId, "first");
  const { key: second } = await keys.createKey(workspaceId, "second");
  await seedOneOfEach(h.rt, stores.table, workspaceId, key);
  const [competitorId = ""] = (
    (await (await call("/api/intel/competitors", { key })).json()) as {
      competitors: Array<{ id: string }>;
    }
  ).competitors.map((c) => c.id);
  const now = Date.now();
  const competitors = new Competitors({ table: stores.table });
  const held = await competitors.lease(workspaceId, competitorId, now, now + 60_000);
  const snapshotKey = await new Snapshots(stores.blobs).save(workspaceId, competitorId, {
    takenAt: new Date(now).toISOString(),
    homepage: "https://fixture-rival.invalid/",
    facts: {},
    carried: [],
  });
  await competitors.release(held, { snapshotKey });
  const webhook = await call("/api/webhooks", {
    method: "POST",
    key,
    json: { url: "https://hooks.fixture.invalid/kb", events: ["source.failed"] },
  });
  expect(webhook.status).toBe(201);
  const upload = await call("/api/knowledge/uploads", {
    method: "POST",
    key,
    json: { filename: "brochure.pdf", contentType: "application/pdf", bytes: 5 },
  });
  const { id: uploadId } = (await upload.json()) as { id: string };
  expect(upload.status).toBe(200);
  // Left in the upload area, as a failed upload leaves a file until the lifecycle expires it.
  await stores.blobs.put(
    `uploads/ws/${workspaceId}/kb/${uploadId}/left`,
    "%PDF-",
    "application/pdf",
  );
  expect((await call("/api/export", { method: "POST", key })).status).toBe(202);
  await h.rt.runtime.queues.idle();
  return { workspaceId, keys: [key, second] };
}

let searchable: SearchIndex;

beforeAll(async () => {
  h = await startHardened({ env: { KEY_CACHE_SECONDS: "0" } });
  stores = runtimeStores();
  keys = new KeyStore(stores.table, 0);
  searchDir = process.env.SEARCH_INDEX_URI ?? "";
  searchable = new SearchIndex({
    location: { uri: searchDir },
    lock: new DynamoWriterLock(stores.table),
  });
}, 60_000);

afterAll(() => h.close());

describe("npm run workspace -- delete", () => {
  let erased: { workspaceId: string; keys: string[] };
  let other: { workspaceId: string; keys: string[] };
  let othersBefore: Awaited<ReturnType<typeof allBut>>;

  beforeAll(async () => {
    erased = await seedWorkspace("Leaving");
    other = await seedWorkspace("Staying");
    othersBefore = await allBut(erased.workspaceId);
  }, 120_000);

  it("refuses without --yes, and erases nothing", async () => {
    const refused = await workspaceCli("delete", erased.workspaceId);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("--yes");
    const traces = await tracesOf(erased.workspaceId);
    expect(traces.items.length).toBeGreaterThan(10);
    expect(traces.objects.length).toBeGreaterThan(3);
    expect(traces.searchIndex).toBe(true);
    expect((await call("/api/knowledge", { key: erased.keys[0] })).status).toBe(200);
  });

  it("leaves nothing that names the workspace: no record, key, file or index", async () => {
    const run = await workspaceCli("delete", erased.workspaceId, "--yes");
    expect(run.stdout).toContain(`nothing of ${erased.workspaceId} is left`);
    expect(run.status).toBe(0);
    expect(await tracesOf(erased.workspaceId, erased.keys.map(hashKey))).toEqual(NOTHING);
    for (const key of erased.keys) {
      expect((await call("/api/knowledge", { key })).status).toBe(401);
    }
  });

  it("leaves another workspace as it was", async () => {
    expect(await allBut(erased.workspaceId)).toEqual(othersBefore);
    const [key] = other.keys;
    const search = await call("/api/knowledge/search", {
      method: "POST",
      key,
      json: { query: "source to aim at" },
    });
    expect(search.status).toBe(200);
    expect(((await search.json()) as { results: unknown[] }).results.length).toBeGreaterThan(0);
  });

  it("leaves no index rows: the same id made again searches an empty index", async () => {
    expect(await searchable.search(other.workspaceId, { text: "aim", limit: 5 })).not.toEqual([]);
    expect(await searchable.search(erased.workspaceId, { text: "aim", limit: 5 })).toEqual([]);
    // The workspace made again, with the same id (ids are never reused; this is the worst case).
    const { workspaceId } = erased;
    const createdAt = new Date().toISOString();
    const workspace = { id: workspaceId, name: "Again", createdAt };
    await stores.table.put({ pk: `WS#${workspaceId}`, sk: "META", ...workspace });
    await stores.table.put({ pk: "WORKSPACES", sk: workspaceId, ...workspace });
    const { key } = await keys.createKey(workspaceId, "again");
    const search = await call("/api/knowledge/search", {
      method: "POST",
      key,
      json: { query: "source to aim at" },
    });
    expect(search.status).toBe(200);
    expect(await search.json()).toMatchObject({ results: [] });
    await eraseWorkspace(
      { table: stores.table, blobs: stores.blobs, keys, search: searchable },
      workspaceId,
    );
  });

  it("changes nothing when run again", async () => {
    const before = await everything();
    const again = await workspaceCli("delete", erased.workspaceId, "--yes");
    expect(again.status).toBe(0);
    expect(again.stdout).toContain(`nothing of ${erased.workspaceId} is left`);
    const after = await everything();
    expect(after.objects).toEqual(before.objects);
    expect(after.items.filter((i) => !i.includes('"RATE#'))).toEqual(
      before.items.filter((i) => !i.includes('"RATE#')),
    );
  });
});

describe("an erasure cut short", () => {
  /**
   * The stores an erasure works on, failing at its `stop`-th deletion as a crash would stop it
   * there: every deletion counts, the two of each API key included.
   */
  function cutShort(stop: number) {
    let deletions = 0;
    const state: { stoppedAt?: string } = {};
    const tick = (what: string) => {
      if (++deletions === stop) {
        state.stoppedAt = what;
        throw new Error(`stopped before ${what}`);
      }
    };
    const table = Object.create(stores.table) as Table;
    table.delete = (pk, sk, condition) => {
      tick(`${pk.replace(/#.*/, "#")} ${sk.replace(/_.*/, "_")}`);
      return stores.table.delete(pk, sk, condition);
    };
    table.deleteAll = (pk, prefix) => {
      tick(`all of ${pk === "COMPETITORS" ? pk : "the partition"}`);
      return stores.table.deleteAll(pk, prefix);
    };
    const blobs = Object.create(stores.blobs) as Blobs;
    blobs.purge = (prefix) => {
      tick(`files ${prefix.split("/")[0]}`);
      return stores.blobs.purge(prefix);
    };
    const search = Object.create(searchable) as SearchIndex;
    search.dropWorkspace = (workspaceId) => {
      tick("search index");
      return searchable.dropWorkspace(workspaceId);
    };
    const deps: ErasureDeps = { table, blobs, keys: new KeyStore(table, 0), search };
    return { deps, state };
  }

  it("is finished by the next run, wherever it stopped", async () => {
    const stoppedAt: string[] = [];
    for (let stop = 1; ; stop++) {
      const { workspaceId, keys: its } = await seedWorkspace(`Cut short ${stop}`);
      const cut = cutShort(stop);
      await eraseWorkspace(cut.deps, workspaceId).catch(() => undefined);
      const whole = cutShort(0).deps;
      await eraseWorkspace(whole, workspaceId);
      const label = cut.state.stoppedAt ?? "not stopped";
      expect(await remainsOf(whole, workspaceId), label).toEqual({
        keys: 0,
        sweepEntries: 0,
        records: 0,
        searchIndex: 0,
        files: 0,
        listed: 0,
      });
      expect(await tracesOf(workspaceId, its.map(hashKey)), label).toEqual(NOTHING);
      if (!cut.state.stoppedAt) break;
      stoppedAt.push(cut.state.stoppedAt);
    }
    // Within a key (between its own item and its listing), and before every other deletion.
    expect(stoppedAt).toEqual([
      "KEY# KEY",
      "KEYS key_",
      "KEY# KEY",
      "KEYS key_",
      "all of COMPETITORS",
      "all of the partition",
      "search index",
      "all of the partition",
      "files ws",
      "files uploads",
      "files exports",
      "WORKSPACES ws_",
    ]);
  }, 300_000);
});
