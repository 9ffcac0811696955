import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../../lib/auth/keys.js";
import { Competitors } from "../../lib/competitors/competitors.js";
import { Snapshots } from "../../lib/competitors/snapshot.js";
import type { SealedSecret } from "../../lib/store/keys.js";
import type { Item } from "../../lib/store/table.js";
import { RECORD_KINDS } from "../../lib/workspaces/export/format.js";
import { seedOneOfEach } from "../hardening/fixtures.js";
import { type Hardened, startHardened } from "../hardening/runtime.js";
import { runtimeStores } from "../hardening/store.js";

/**
 * POST /api/export and GET /api/export/{exportId} over HTTP against the in-process runtime: the
 * export worker writes a workspace with one record of every kind into one bundle, in parts of a
 * kilobyte, one part per message (each message carries on from the last one's checkpoint), and
 * the bundle holds every kind, each record once, and no secret.
 */

const PART_BYTES = 1024;
const EXPORTS_PER_DAY = 4;

let h: Hardened;
let workspaceId: string;
let ids: Record<string, string[]>;
let webhookSecret: string;
/** The bundle of the first export, line by line, and its job as the API answered it. */
let lines: Array<Record<string, unknown> & { kind: string }>;
let text: string;
let job: Record<string, unknown>;

interface ExportAnswer {
  exportId: string;
  status: string;
  counts: Record<string, number>;
  bytes: number;
  download: { url: string; expiresAt: string; contentType: string } | null;
}

const call = (path: string, init: RequestInit & { json?: unknown; key?: string | null } = {}) =>
  h.rt.call(path, init);

async function startExport(key?: string): Promise<ExportAnswer> {
  const res = await call("/api/export", { method: "POST", ...(key ? { key } : {}) });
  const body = (await res.json()) as ExportAnswer;
  expect(res.status, JSON.stringify(body)).toBe(202);
  return body;
}

beforeAll(async () => {
  h = await startHardened({
    env: {
      EXPORT_PART_BYTES: String(PART_BYTES),
      EXPORT_SLICE_SECONDS: "0",
      QUOTA_EXPORTS_PER_DAY: String(EXPORTS_PER_DAY),
    },
  });
  workspaceId = h.rt.runtime.workspaceId;
  const stores = runtimeStores();
  ids = await seedOneOfEach(h.rt, stores.table, workspaceId, h.rt.key);
  await h.rt.runtime.queues.idle();

  // The competitor's latest snapshot, saved as a check saves it.
  const competitors = new Competitors({ table: stores.table });
  const [competitorId = ""] = ids.comp_ ?? [];
  const now = Date.now();
  const held = await competitors.lease(workspaceId, competitorId, now, now + 60_000);
  const snapshotKey = await new Snapshots(stores.blobs).save(workspaceId, competitorId, {
    takenAt: new Date(now).toISOString(),
    homepage: "https://fixture-rival.invalid/",
    facts: {
      messaging: { url: "https://fixture-rival.invalid/", headline: "Rivalry", claims: [] },
    },
    carried: [],
  });
  await competitors.release(held, { snapshotKey, lastAnalyzedAt: new Date(now).toISOString() });

  // Subscribed to failures only: nothing the test does sends it a delivery.
  const webhook = await call("/api/webhooks", {
    method: "POST",
    json: { url: "https://hooks.fixture.invalid/kb", events: ["source.failed"] },
  });
  const created = (await webhook.json()) as { id: string; secret: string };
  expect(webhook.status).toBe(201);
  webhookSecret = created.secret;
  ids.wh_ = [created.id];

  const started = await startExport();
  expect(started).toMatchObject({ status: "queued", download: null });
  await h.rt.runtime.queues.idle();
  const res = await call(`/api/export/${started.exportId}`);
  job = (await res.json()) as Record<string, unknown>;
  expect(res.status).toBe(200);
  const download = job.download as ExportAnswer["download"];
  const file = await fetch(download?.url ?? "");
  expect(file.status).toBe(200);
  text = await file.text();
  lines = text
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown> & { kind: string });
}, 120_000);

afterAll(() => h.close());

const ofKind = (kind: string) => lines.filter((line) => line.kind === kind);

describe("a workspace export", () => {
  it("is ready with a download link, written in many parts, one message each", () => {
    expect(job).toMatchObject({
      status: "ready",
      error: null,
      download: { contentType: "application/x-ndjson" },
    });
    // More than three parts' worth: the bundle was carried on from checkpoints several times.
    expect(job.bytes).toBe(Buffer.byteLength(text));
    expect(Number(job.bytes)).toBeGreaterThan(3 * PART_BYTES);
  });

  it("opens with its header, closes with the count of each kind, and holds every kind", () => {
    expect(lines[0]).toMatchObject({ kind: "export", format: "kb-intel-export/1", workspaceId });
    const trailer = lines.at(-1);
    expect(trailer?.kind).toBe("end");
    const counts = Object.fromEntries(RECORD_KINDS.map((kind) => [kind, ofKind(kind).length]));
    expect(trailer?.counts).toEqual(counts);
    expect(job.counts).toEqual(counts);
    for (const kind of RECORD_KINDS) expect(ofKind(kind).length, kind).toBeGreaterThan(0);
  });

  it("holds each record once, the same the API lists", async () => {
    const listed = async (path: string, field: string) =>
      (((await (await call(path)).json()) as Record<string, Array<{ id: string }>>)[field] ?? [])
        .map((item) => item.id)
        .sort();
    const exported = (kind: string, field = "id") =>
      ofKind(kind)
        .map((line) => String(line[field]))
        .sort();
    expect(exported("source")).toEqual(await listed("/api/knowledge", "sources"));
    expect(exported("event")).toEqual(await listed("/api/intel/events", "events"));
    expect(exported("artifact")).toEqual(ids.art_);
    expect(exported("competitor")).toEqual(ids.comp_);
    expect(exported("crawl", "crawlId")).toEqual(ids.crawl_);
    expect(exported("webhook")).toEqual(ids.wh_);
  });

  it("carries each source's text as indexed, the competitor's snapshot, the brand and usage", () => {
    const [source] = ofKind("source");
    expect(source).toMatchObject({ status: "indexed" });
    const chunks = source?.chunks as Array<{ text: string }>;
    expect(chunks.map((c) => c.text).join(" ")).toContain("A source to aim at.");
    expect(ofKind("competitor")[0]?.latestSnapshot).toMatchObject({
      facts: { messaging: { headline: "Rivalry" } },
    });
    expect(ofKind("brand")[0]).toMatchObject({ name: "Fixture Co" });
    expect(ofKind("workspace")[0]).toMatchObject({ id: workspaceId });
    const usage = ofKind("usage")[0] as { quotas: { exports: { used: number } } } | undefined;
    // This export, and the one the fixtures start.
    expect(usage?.quotas.exports.used).toBe(2);
  });

  it("holds no secret: no signing secret, sealed or not, API key, key hash or other tenant", async () => {
    const [webhook] = ofKind("webhook");
    expect(webhook).toMatchObject({ url: "https://hooks.fixture.invalid/kb" });
    const stored = (await runtimeStores().table.get<Item & { sealedSecret?: SealedSecret }>(
      `WS#${workspaceId}`,
      `WEBHOOK#${webhook?.id}`,
    )) ?? { sealedSecret: undefined };
    expect(stored.sealedSecret?.data).toBeDefined();
    const otherWorkspace = await h.rt.runtime.keys.verify(h.rt.otherKey);
    for (const secret of [
      webhookSecret,
      webhookSecret.slice("whsec_".length),
      stored.sealedSecret?.data ?? "",
      stored.sealedSecret?.key ?? "",
      h.rt.key,
      hashKey(h.rt.key),
      String(otherWorkspace),
    ]) {
      expect(text.includes(secret), secret).toBe(false);
    }
    const fieldNames = (value: unknown): string[] =>
      value && typeof value === "object"
        ? Object.entries(value).flatMap(([name, inner]) => [name, ...fieldNames(inner)])
        : [];
    expect(lines.flatMap(fieldNames).filter((name) => /secret|hash/i.test(name))).toEqual([]);
  });
});

describe("npm run workspace -- export", () => {
  const workspaceCli = (...args: string[]) =>
    new Promise<{ stderr: string; status: number }>((resolve) => {
      execFile(
        "node_modules/.bin/tsx",
        ["infra/admin/workspace-cli.ts", ...args],
        { env: process.env, encoding: "utf8" },
        (error, _stdout, stderr) =>
          resolve({ stderr, status: error ? Number(error.code ?? 1) : 0 }),
      );
    });

  it("writes the same records to a file, today's usage left out", async () => {
    const out = join(await mkdtemp(join(tmpdir(), "kb-export-")), "acme.ndjson");
    const run = await workspaceCli("export", workspaceId, "--out", out);
    expect(run.stderr).toContain(`exported ${workspaceId} to ${out}`);
    expect(run.status).toBe(0);
    const written = (await readFile(out, "utf8"))
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown> & { kind: string });
    expect(written[0]).toMatchObject({ kind: "export", workspaceId });
    const records = (of: typeof lines) =>
      of
        .filter((line) => !["export", "end", "usage"].includes(line.kind))
        .map((line) => `${line.kind} ${String(line.id ?? line.crawlId ?? "")}`);
    expect(records(written)).toEqual(records(lines));
    expect(written.at(-1)).toMatchObject({ kind: "end", counts: { usage: 0 } });
  });

  it("refuses what is not a workspace id", async () => {
    const run = await workspaceCli("export", "ws_");
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("needs a workspace id");
  });
});

describe("exports and tenants", () => {
  it("answers another workspace's export id 404, as an unknown one", async () => {
    const mine = await startExport();
    const theirs = await startExport(h.rt.otherKey);
    for (const [id, key] of [
      [mine.exportId, h.rt.otherKey],
      [theirs.exportId, h.rt.key],
      ["exp_01J0000000000000000000ZZZZ", h.rt.key],
    ] as const) {
      const res = await call(`/api/export/${id}`, { key });
      expect(res.status, id).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: "not_found" } });
    }
    await h.rt.runtime.queues.idle();
    const own = (await (
      await call(`/api/export/${theirs.exportId}`, { key: h.rt.otherKey })
    ).json()) as ExportAnswer;
    expect(own.status).toBe("ready");
    const bundle = await (await fetch(own.download?.url ?? "")).text();
    expect(bundle).not.toContain(workspaceId);
    expect(bundle).not.toContain("A source to aim at.");
  });

  it("counts against the daily exports quota: past it, a 429 naming the quota", async () => {
    const usage = (await (await call("/api/usage")).json()) as {
      quotas: { exports: { used: number } };
    };
    for (let used = usage.quotas.exports.used; used < EXPORTS_PER_DAY; used++) await startExport();
    const refused = await call("/api/export", { method: "POST" });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({
      error: { code: "quota_exceeded", details: { quota: "exports", limit: EXPORTS_PER_DAY } },
    });
    await h.rt.runtime.queues.idle();
  });

  it("needs a key", async () => {
    expect((await call("/api/export", { method: "POST", key: null })).status).toBe(401);
  });
});
