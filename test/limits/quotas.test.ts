import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { isDomainError } from "../../lib/errors.js";
import {
  type ChargedItem,
  type QuotaCharge,
  type QuotaKind,
  Quotas,
  refundUnused,
} from "../../lib/limits/quotas.js";
import { wsKey } from "../../lib/store/table.js";
import { startAws, type TestAws } from "../support/aws.js";

/**
 * Daily quotas against dynalite, raced as a busy workspace races them: many function instances
 * take from one counter at once, and work that ends returns what it did not use, once.
 */

/** Refunds as a record's own writer would: marking the record itself, under the given condition. */
const refund = (record: ChargedItem, unused: number) =>
  refundUnused(
    aws.table,
    record,
    unused,
    async (quota, condition) =>
      (await aws.table.update(record.pk, record.sk, { quota }, condition)) !== undefined,
  );

const LIMIT = 100;
let aws: TestAws;
let quotas: Quotas;
let workspaces = 0;

beforeAll(async () => {
  aws = await startAws();
  quotas = new Quotas(aws.table, {
    crawl_pages: LIMIT,
    upload_bytes: LIMIT,
    model_calls: LIMIT,
    competitor_checks: LIMIT,
    exports: LIMIT,
    reindexes: LIMIT,
  });
});
afterAll(() => aws.close());

const freshWorkspace = () => `ws_quota${++workspaces}`;

async function counter(workspaceId: string, charge: Pick<QuotaCharge, "day" | "kind">) {
  const item = await aws.table.get<{ pk: string; sk: string; used: number }>(
    wsKey(workspaceId),
    `QUOTA#${charge.day}#${charge.kind}`,
  );
  return item?.used;
}

/** Takes `amount`, answering the charge, or undefined when the quota refused it. */
async function tryConsume(workspaceId: string, amount: number) {
  try {
    return await quotas.consume(workspaceId, "crawl_pages", amount);
  } catch (err) {
    if (isDomainError(err, "quota_exceeded")) return undefined;
    throw err;
  }
}

/** A record paid for by a charge, as a crawl or an upload keeps it. */
async function chargedRecord(workspaceId: string, charge: QuotaCharge, id: string) {
  const record: ChargedItem = {
    pk: wsKey(workspaceId),
    sk: `WORK#${id}`,
    workspaceId,
    quota: charge,
  };
  await aws.table.put(record);
  return record;
}

describe("concurrent consumption of one quota", () => {
  it("never grants more than the limit, and counts exactly what it granted", async () => {
    const workspaceId = freshWorkspace();
    // 80 requests asking 1 to 7 each (about 320 in all) for a limit of 100, all at once.
    const amounts = Array.from({ length: 80 }, (_, i) => 1 + ((i * 5) % 7));
    const charges = await Promise.all(amounts.map((amount) => tryConsume(workspaceId, amount)));
    const granted = charges.filter((c): c is QuotaCharge => c !== undefined);
    const total = granted.reduce((sum, c) => sum + c.amount, 0);
    const refused = amounts.filter((_, i) => charges[i] === undefined);

    expect(total).toBeLessThanOrEqual(LIMIT);
    expect(refused.length).toBeGreaterThan(0);
    // Each refusal saw less room than it asked for, and room only shrinks: the quota was filled.
    expect(LIMIT - total).toBeLessThan(Math.min(...refused));
    const [first] = granted;
    expect(first).toBeDefined();
    expect(await counter(workspaceId, first as QuotaCharge)).toBe(total);
  });

  it("stays exact when refunds race the consumptions", async () => {
    const workspaceId = freshWorkspace();
    const held = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const charge = await tryConsume(workspaceId, 10);
        return chargedRecord(workspaceId, charge as QuotaCharge, `held${i}`);
      }),
    );
    const charge = held[0]?.quota as QuotaCharge;
    // The quota is full; every held charge returns 4 while 40 requests of 1 race for the room.
    const [refunds, takers] = await Promise.all([
      Promise.all(held.map((record) => refund(record, 4))),
      Promise.all(Array.from({ length: 40 }, () => tryConsume(workspaceId, 1))),
    ]);
    const returned = refunds.reduce((sum, n) => sum + n, 0);
    const taken = takers.filter((c) => c !== undefined).length;
    expect(returned).toBe(40);
    expect(taken).toBeLessThanOrEqual(40);
    expect(await counter(workspaceId, charge)).toBe(LIMIT - returned + taken);
  });
});

describe("a refused consumption", () => {
  it.each<[QuotaKind, string]>([
    ["crawl_pages", "crawl pages"],
    ["upload_bytes", "uploaded bytes"],
    ["model_calls", "model calls"],
    ["competitor_checks", "competitor checks"],
    ["exports", "workspace exports"],
  ])("names the %s quota, its limit, the amount asked and when it resets", async (kind, name) => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.UTC(2026, 2, 14, 23, 59, 30, 250));
      const workspaceId = freshWorkspace();
      await quotas.consume(workspaceId, kind, LIMIT - 10);
      const refused = await quotas.consume(workspaceId, kind, 11).catch((e: unknown) => e);
      expect(refused).toMatchObject({
        code: "quota_exceeded",
        message: `Daily quota of ${name} reached: ${LIMIT} per day, and this needs 11`,
        details: { quota: kind, limit: LIMIT, requested: 11, resetsAt: "2026-03-15T00:00:00.000Z" },
        retryAfterSeconds: 30,
      });
      // The day's counter goes away by itself a day after the quota resets.
      const counter = await aws.table.get(wsKey(workspaceId), `QUOTA#2026-03-14#${kind}`);
      expect(counter).toMatchObject({
        used: LIMIT - 10,
        expiresAt: Date.UTC(2026, 2, 16) / 1000,
      });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("a workspace's usage", () => {
  const at = (iso: string) => vi.setSystemTime(Date.parse(iso));

  it("reads every quota's counter of the current UTC day, and only the workspace's own", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const workspaceId = freshWorkspace();
      const other = freshWorkspace();
      at("2026-03-13T23:59:59.900Z");
      await quotas.consume(workspaceId, "upload_bytes", 40);
      at("2026-03-14T00:00:00.000Z");
      await quotas.consume(workspaceId, "crawl_pages", 30);
      await quotas.consume(workspaceId, "crawl_pages", 7);
      at("2026-03-14T23:59:59.000Z");
      await quotas.consume(workspaceId, "model_calls", LIMIT);
      await quotas.consume(other, "competitor_checks", 3);

      const resetsAt = "2026-03-15T00:00:00.000Z";
      expect(await quotas.usage(workspaceId)).toEqual({
        day: "2026-03-14",
        quotas: {
          crawl_pages: { used: 37, limit: LIMIT, remaining: LIMIT - 37, resetsAt },
          // Yesterday's bytes are not today's.
          upload_bytes: { used: 0, limit: LIMIT, remaining: LIMIT, resetsAt },
          model_calls: { used: LIMIT, limit: LIMIT, remaining: 0, resetsAt },
          competitor_checks: { used: 0, limit: LIMIT, remaining: LIMIT, resetsAt },
          exports: { used: 0, limit: LIMIT, remaining: LIMIT, resetsAt },
          reindexes: { used: 0, limit: LIMIT, remaining: LIMIT, resetsAt },
        },
      });
      expect((await quotas.usage(other)).quotas.competitor_checks.used).toBe(3);

      // At midnight every quota starts again.
      at("2026-03-15T00:00:00.000Z");
      const tomorrow = await quotas.usage(workspaceId);
      expect(tomorrow.day).toBe("2026-03-15");
      expect(Object.values(tomorrow.quotas).map((q) => q.used)).toEqual([0, 0, 0, 0, 0, 0]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("refunds", () => {
  it("returns the unused part of a charge once, however often and concurrently it is asked", async () => {
    const workspaceId = freshWorkspace();
    const charge = (await tryConsume(workspaceId, 30)) as QuotaCharge;
    const record = await chargedRecord(workspaceId, charge, "crawl1");

    const returned = await Promise.all(Array.from({ length: 12 }, () => refund(record, 20)));
    expect(returned.filter((n) => n > 0)).toEqual([20]);
    expect(await counter(workspaceId, charge)).toBe(10);
    const stored = await aws.table.get<ChargedItem>(record.pk, record.sk);
    expect(stored?.quota).toEqual({ ...charge, refunded: 20 });
    // Marked refunded: a later call, with the stored record, returns nothing more.
    expect(await refund(stored as ChargedItem, 20)).toBe(0);
    expect(await counter(workspaceId, charge)).toBe(10);
  });

  it("never returns more than was charged, nor takes the counter below zero", async () => {
    const workspaceId = freshWorkspace();
    const charge = (await tryConsume(workspaceId, 5)) as QuotaCharge;
    const record = await chargedRecord(workspaceId, charge, "big");
    expect(await refund(record, 50)).toBe(5);
    expect(await counter(workspaceId, charge)).toBe(0);

    // A charge whose counter holds less than it (a counter past its day, removed by TTL) stays put.
    const stale = await chargedRecord(workspaceId, { ...charge, amount: 5 }, "stale");
    expect(await refund(stale, 5)).toBe(0);
    expect(await counter(workspaceId, charge)).toBe(0);
  });

  it("refunds a charge once even when the counter has room for a second refund", async () => {
    const workspaceId = freshWorkspace();
    await tryConsume(workspaceId, 50);
    const charge = (await tryConsume(workspaceId, 30)) as QuotaCharge;
    const record = await chargedRecord(workspaceId, charge, "twice");
    expect(await refund(record, 20)).toBe(20);
    expect(await refund(record, 20)).toBe(0);
    expect(await counter(workspaceId, charge)).toBe(60);
  });

  it("keeps a charge refundable after asking to return nothing or less than nothing", async () => {
    const workspaceId = freshWorkspace();
    const charge = (await tryConsume(workspaceId, 30)) as QuotaCharge;
    const record = await chargedRecord(workspaceId, charge, "later");
    expect(await refund(record, 0)).toBe(0);
    expect(await refund(record, -3)).toBe(0);
    expect(await counter(workspaceId, charge)).toBe(30);
    expect(await refund(record, 5)).toBe(5);
    expect(await counter(workspaceId, charge)).toBe(25);
  });

  it("returns nothing for work without a charge or that used it all", async () => {
    const workspaceId = freshWorkspace();
    const charge = (await tryConsume(workspaceId, 8)) as QuotaCharge;
    const used = await chargedRecord(workspaceId, charge, "used");
    expect(await refund(used, 0)).toBe(0);
    const free: ChargedItem = { pk: wsKey(workspaceId), sk: "WORK#free", workspaceId };
    await aws.table.put(free);
    expect(await refund(free, 8)).toBe(0);
    expect(await counter(workspaceId, charge)).toBe(8);
  });
});
