import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Stores } from "../../lib/store/clients.js";
import { expectWellFormed, send } from "./probe.js";
import { type Hardened, startHardened } from "./runtime.js";
import { runtimeStores } from "./store.js";

/**
 * A bounded load run: many clients at once create, list, disable, enable, reindex, search and
 * delete text sources while the workers index them. Each client owns its sources, so the last
 * acknowledged write of each is well defined. Once the queues are idle, the service must agree
 * with what it acknowledged: every acknowledged source is there, indexed and enabled as last
 * set; every deleted one is gone from the API, the table, the bucket and search; counts match.
 * LOAD_SEED and LOAD_CLIENTS change the run; the seed is in every failure message.
 */

const SEED = Number(process.env.LOAD_SEED ?? 1609);
const CLIENTS = Number(process.env.LOAD_CLIENTS ?? 16);
const OPS_PER_CLIENT = 12;

let h: Hardened;
let stores: Stores;

beforeAll(async () => {
  h = await startHardened();
  stores = runtimeStores();
});
afterAll(() => h.close());

/** mulberry32: a small seeded generator, so a run can be replayed. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Owned {
  id: string;
  /** A word only this source contains. */
  marker: string;
  enabled: boolean;
  deleted: boolean;
}

const ctx = `(LOAD_SEED=${SEED}, LOAD_CLIENTS=${CLIENTS})`;

async function call(method: string, path: string, json?: unknown) {
  const answer = await send(h.rt.url, {
    method,
    path,
    key: h.rt.key,
    ...(json !== undefined
      ? { body: JSON.stringify(json), headers: { "content-type": "application/json" } }
      : {}),
  });
  expectWellFormed(`${method} ${path} ${ctx}`, answer);
  return answer;
}

/** One client: its own sources, a seeded mix of operations on them. */
async function client(n: number, owned: Owned[]): Promise<void> {
  const next = random(SEED * 1000 + n);
  const pick = () => {
    const live = owned.filter((s) => !s.deleted);
    return live[Math.floor(next() * live.length)];
  };
  for (let op = 0; op < OPS_PER_CLIENT; op++) {
    const roll = next();
    const target = pick();
    if (roll < 0.35 || !target) {
      const marker = `loadmark${n}x${op}q${SEED}`;
      const answer = await call("POST", "/api/knowledge", {
        text: `# Load ${marker}\n${marker} is source ${op} of client ${n}. It has a few sentences. They are indexed under load.`,
      });
      expect(answer.status, `create ${ctx}: ${answer.text}`).toBe(200);
      owned.push({
        id: (JSON.parse(answer.text) as { id: string }).id,
        marker,
        enabled: true,
        deleted: false,
      });
    } else if (roll < 0.5) {
      const answer = await call("PATCH", `/api/knowledge/${target.id}`, {
        enabled: !target.enabled,
      });
      expect(answer.status, `patch ${target.id} ${ctx}: ${answer.text}`).toBe(200);
      target.enabled = !target.enabled;
    } else if (roll < 0.65) {
      const answer = await call("DELETE", `/api/knowledge/${target.id}`);
      expect(answer.status, `delete ${target.id} ${ctx}: ${answer.text}`).toBe(204);
      target.deleted = true;
    } else if (roll < 0.75) {
      const answer = await call("POST", `/api/knowledge/${target.id}/reindex`);
      expect(answer.status, `reindex ${target.id} ${ctx}: ${answer.text}`).toBe(200);
    } else if (roll < 0.88) {
      const answer = await call("GET", `/api/knowledge?limit=${1 + Math.floor(next() * 20)}`);
      expect(answer.status, `list ${ctx}`).toBe(200);
    } else {
      const answer = await call("POST", "/api/knowledge/search", { query: target.marker });
      expect(answer.status, `search ${ctx}`).toBe(200);
    }
  }
}

interface Source {
  id: string;
  status: string;
  enabled: number;
  chunk_count: number;
}

async function allSources(): Promise<Source[]> {
  const sources: Source[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const answer = await call("GET", `/api/knowledge?limit=100${query}`);
    const page = JSON.parse(answer.text) as { sources: Source[]; nextCursor: string | null };
    sources.push(...page.sources);
    cursor = page.nextCursor;
  } while (cursor);
  return sources;
}

describe("a load run of concurrent clients", () => {
  const owned: Owned[][] = Array.from({ length: CLIENTS }, () => []);

  it(`serves ${CLIENTS} concurrent clients without a 5xx while the workers index`, async () => {
    await Promise.all(owned.map((mine, n) => client(n, mine)));
    await h.rt.runtime.queues.idle();
    expect(owned.flat().length, ctx).toBeGreaterThan(CLIENTS);
  });

  it("lists exactly the acknowledged sources, indexed and enabled as last set", async () => {
    const live = owned.flat().filter((s) => !s.deleted);
    const listed = await allSources();
    expect(listed.map((s) => s.id).sort(), ctx).toEqual(live.map((s) => s.id).sort());
    const byId = new Map(listed.map((s) => [s.id, s]));
    for (const source of live) {
      const found = byId.get(source.id);
      expect(found, `${source.id} ${ctx}`).toMatchObject({
        status: "indexed",
        enabled: source.enabled ? 1 : 0,
      });
      expect(found?.chunk_count, `${source.id} ${ctx}`).toBeGreaterThan(0);
    }
    const indexing = await call("GET", "/api/knowledge?status=indexing");
    expect(JSON.parse(indexing.text), ctx).toMatchObject({ sources: [] });
  });

  it("answers 404 for every deleted source and keeps none of its items or objects", async () => {
    const deleted = owned.flat().filter((s) => s.deleted);
    expect(deleted.length, `some sources were deleted ${ctx}`).toBeGreaterThan(0);
    for (const source of deleted) {
      const answer = await call("GET", `/api/knowledge/${source.id}`);
      expect(answer.status, `${source.id} ${ctx}`).toBe(404);
    }
    const workspace = h.rt.runtime.workspaceId;
    const live = new Set(
      owned
        .flat()
        .filter((s) => !s.deleted)
        .map((s) => s.id),
    );

    // The bucket: objects exist for live sources only, and every live source has its objects.
    const keys = await stores.blobs.list(`ws/${workspace}/kb/`);
    const withObjects = new Set(keys.map((key) => key.split("/")[3] ?? ""));
    expect(
      [...withObjects].filter((id) => !live.has(id)),
      `orphaned objects ${ctx}`,
    ).toEqual([]);
    expect(
      [...live].filter((id) => !withObjects.has(id)),
      `live without objects ${ctx}`,
    ).toEqual([]);

    // The table: one record per live source, none still marked as indexing.
    const records = await stores.table.all<{ pk: string; sk: string; id: string; gsi1pk?: string }>(
      `WS#${workspace}`,
      "KB#",
    );
    expect(records.map((r) => r.id).sort(), ctx).toEqual([...live].sort());
    expect(
      records.filter((r) => r.gsi1pk !== undefined).map((r) => r.id),
      ctx,
    ).toEqual([]);
    expect(h.rt.runtime.queues.deadLetters("index"), ctx).toEqual([]);
  });

  it("finds enabled sources by their own words, and never a disabled or deleted one", async () => {
    for (const source of owned.flat()) {
      const answer = await call("POST", "/api/knowledge/search", { query: source.marker });
      const ids = (
        JSON.parse(answer.text) as { results: Array<{ source_id: string }> }
      ).results.map((r) => r.source_id);
      const should = !source.deleted && source.enabled;
      const label = `${source.id} (${source.deleted ? "deleted" : source.enabled ? "enabled" : "disabled"}) ${ctx}`;
      if (should) expect(ids, label).toContain(source.id);
      else expect(ids, label).not.toContain(source.id);
    }
  });

  it("never resurrects a source deleted while others reindex and update it", async () => {
    const workspace = h.rt.runtime.workspaceId;
    const raced: Owned[] = [];
    for (let n = 0; n < 8; n++) {
      const marker = `racemark${n}q${SEED}`;
      const answer = await call("POST", "/api/knowledge", {
        text: `# Race ${marker}\n${marker} is raced. It is reindexed, updated and deleted at once.`,
      });
      raced.push({
        id: (JSON.parse(answer.text) as { id: string }).id,
        marker,
        enabled: true,
        deleted: false,
      });
    }
    await Promise.all(
      raced.flatMap((source, n) => {
        const ops = [
          ...Array.from(
            { length: 4 },
            () => () => call("POST", `/api/knowledge/${source.id}/reindex`),
          ),
          ...Array.from(
            { length: 3 },
            (_, i) => () => call("PATCH", `/api/knowledge/${source.id}`, { enabled: i % 2 === 0 }),
          ),
        ];
        // The delete lands among them, at a different place for each source.
        ops.splice(n % ops.length, 0, () => call("DELETE", `/api/knowledge/${source.id}`));
        return ops.map(async (op) => {
          const answer = await op();
          expect([200, 204, 404, 409], `${source.id}: ${answer.text} ${ctx}`).toContain(
            answer.status,
          );
        });
      }),
    );
    await h.rt.runtime.queues.idle();
    const keys = await stores.blobs.list(`ws/${workspace}/kb/`);
    for (const source of raced) {
      expect((await call("GET", `/api/knowledge/${source.id}`)).status, source.id).toBe(404);
      expect(
        keys.filter((key) => key.includes(source.id)),
        `${source.id} ${ctx}`,
      ).toEqual([]);
      expect(
        await stores.table.get(`WS#${workspace}`, `KB#${source.id}`),
        `${source.id} ${ctx}`,
      ).toBeUndefined();
      const found = await call("POST", "/api/knowledge/search", { query: source.marker });
      const ids = (JSON.parse(found.text) as { results: Array<{ source_id: string }> }).results;
      expect(
        ids.map((r) => r.source_id),
        `${source.id} ${ctx}`,
      ).not.toContain(source.id);
    }
  });
});
