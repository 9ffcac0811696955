import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { COMPETITOR_PREFIX } from "../../lib/competitors/competitors.js";
import { isDomainError } from "../../lib/errors.js";
import { ARTIFACT_PREFIX } from "../../lib/intel/artifacts/artifacts.js";
import { SOURCE_PREFIX } from "../../lib/knowledge/sources/sources.js";
import { CAPPED, Caps, DEFAULT_CAPS } from "../../lib/limits/caps.js";
import { wsKey } from "../../lib/store/table.js";
import { startAws, type TestAws } from "../support/aws.js";

/**
 * The workspace caps' counters against dynalite: a conditional increment that concurrent creates
 * cannot pass together, first counted from the records a workspace holds, and repaired by a
 * recount when a crash left the counter high.
 */

const LIMIT = 5;
let aws: TestAws;
let caps: Caps;
let workspaces = 0;

beforeAll(async () => {
  aws = await startAws();
  caps = new Caps(aws.table, { sources: LIMIT, competitors: LIMIT, artifacts: LIMIT, webhooks: 2 });
});
afterAll(() => aws.close());

const fresh = () => `ws_caps${++workspaces}`;
const record = (workspaceId: string, sk: string) =>
  aws.table.put({ pk: wsKey(workspaceId), sk, workspaceId });
const refused = (err: unknown) => isDomainError(err, "limit_reached");

describe("workspace caps", () => {
  it("count the records the domains write: the prefixes are theirs", () => {
    expect(CAPPED.sources.prefix).toBe(SOURCE_PREFIX);
    expect(CAPPED.competitors.prefix).toBe(COMPETITOR_PREFIX);
    expect(CAPPED.artifacts.prefix).toBe(ARTIFACT_PREFIX);
  });

  it("grant exactly the free slots to concurrent takes", async () => {
    const workspaceId = fresh();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => caps.take(workspaceId, "sources")),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(LIMIT);
    expect(results.filter((r) => r.status === "rejected" && refused(r.reason)).length).toBe(
      20 - LIMIT,
    );
    expect((await caps.usage(workspaceId)).sources).toEqual({
      used: LIMIT,
      limit: LIMIT,
      remaining: 0,
    });
    await caps.release(workspaceId, "sources");
    await caps.take(workspaceId, "sources");
  });

  it("grant every take of a new workspace's first burst when there is room", async () => {
    const roomy = new Caps(aws.table, { ...DEFAULT_CAPS, sources: 1000 });
    const workspaceId = fresh();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => roomy.take(workspaceId, "sources")),
    );
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect((await roomy.usage(workspaceId)).sources.used).toBe(20);
  });

  it("start from the records a workspace holds when it has no counter yet", async () => {
    const workspaceId = fresh();
    for (let i = 0; i < LIMIT - 1; i++) await record(workspaceId, `${SOURCE_PREFIX}kb_old${i}`);
    // Not sources: a URL claim and the searchable-sources counter share the prefix's first letters.
    await record(workspaceId, "KBURL#abc");
    await record(workspaceId, "KBGEN");
    expect((await caps.usage(workspaceId)).sources.used).toBe(LIMIT - 1);
    await caps.take(workspaceId, "sources");
    await expect(caps.take(workspaceId, "sources")).rejects.toSatisfy(refused);
  });

  it("give a slot back never below zero", async () => {
    const workspaceId = fresh();
    await caps.take(workspaceId, "artifacts");
    await caps.release(workspaceId, "artifacts");
    await caps.release(workspaceId, "artifacts");
    expect((await caps.usage(workspaceId)).artifacts.used).toBe(0);
  });

  it("repair a counter a crash left high, by a recount at the cap once it is quiet", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const workspaceId = fresh();
      vi.setSystemTime(Date.parse("2026-03-14T10:00:00Z"));
      // Five slots taken, but only three records written: two creates crashed in between.
      for (let i = 0; i < LIMIT; i++) await caps.take(workspaceId, "competitors");
      for (let i = 0; i < 3; i++) await record(workspaceId, `${COMPETITOR_PREFIX}cmp_${i}`);
      // While creates may still be between their two writes, the counter is left as it is.
      await expect(caps.take(workspaceId, "competitors")).rejects.toSatisfy(refused);

      vi.setSystemTime(Date.parse("2026-03-14T10:02:00Z"));
      await caps.take(workspaceId, "competitors");
      expect((await caps.usage(workspaceId)).competitors.used).toBe(4);
    } finally {
      vi.useRealTimers();
    }
  });
});
