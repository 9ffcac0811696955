import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

/**
 * GET /api/usage on the whole local runtime: work done through the API shows in the counters it
 * answers, for the workspace that did it and no other.
 */

let rt: TestRuntime;

beforeAll(async () => {
  Object.assign(process.env, {
    QUOTA_UPLOAD_BYTES_PER_DAY: "5000",
    QUOTA_COMPETITOR_CHECKS_PER_DAY: "3",
    QUOTA_CRAWL_PAGES_PER_DAY: "40",
    QUOTA_MODEL_CALLS_PER_DAY: "7",
    QUOTA_EXPORTS_PER_DAY: "2",
  });
  rt = await startTestRuntime();
});
afterAll(() => rt.close());

interface Usage {
  day: string;
  quotas: Record<string, { used: number; limit: number; remaining: number; resetsAt: string }>;
  limits: Record<string, { used: number; limit: number; remaining: number }>;
}

const today = () => new Date().toISOString().slice(0, 10);
const nextMidnight = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000);

async function usageOf(key: string): Promise<Usage> {
  const before = today();
  const res = await rt.call("/api/usage", { key });
  expect(res.status).toBe(200);
  const usage = (await res.json()) as Usage;
  // The day the request was answered in, even across midnight.
  expect([before, today()]).toContain(usage.day);
  return usage;
}

describe("GET /api/usage", () => {
  it("counts today's work of the workspace, and answers another workspace its own", async () => {
    const upload = await rt.call("/api/knowledge/uploads", {
      method: "POST",
      json: { filename: "brochure.pdf", contentType: "application/pdf", bytes: 1234 },
    });
    expect(upload.status).toBe(200);
    const added = await rt.call("/api/intel/competitors", {
      method: "POST",
      json: { domain: "example.invalid" },
    });
    const { id } = (await added.json()) as { id: string };
    expect((await rt.call(`/api/intel/competitors/${id}/check`, { method: "POST" })).status).toBe(
      200,
    );
    expect((await rt.call("/api/export", { method: "POST" })).status).toBe(202);

    const usage = await usageOf(rt.key);
    const resetsAt = nextMidnight(usage.day).toISOString();
    expect(usage.quotas).toEqual({
      crawl_pages: { used: 0, limit: 40, remaining: 40, resetsAt },
      upload_bytes: { used: 1234, limit: 5000, remaining: 5000 - 1234, resetsAt },
      model_calls: { used: 0, limit: 7, remaining: 7, resetsAt },
      competitor_checks: { used: 1, limit: 3, remaining: 2, resetsAt },
      exports: { used: 1, limit: 2, remaining: 1, resetsAt },
      reindexes: { used: 0, limit: 1000, remaining: 1000, resetsAt },
    });
    expect(usage.limits).toEqual({
      sources: { used: 1, limit: 10_000, remaining: 9_999 },
      competitors: { used: 1, limit: 100, remaining: 99 },
      artifacts: { used: 0, limit: 10_000, remaining: 10_000 },
      webhooks: { used: 0, limit: 20, remaining: 20 },
    });

    const other = await usageOf(rt.otherKey);
    expect(Object.values(other.quotas).map((q) => [q.used, q.remaining])).toEqual([
      [0, 40],
      [0, 5000],
      [0, 7],
      [0, 3],
      [0, 2],
      [0, 1000],
    ]);
  });

  it("needs a key, and refuses a query parameter it does not know", async () => {
    expect((await rt.call("/api/usage", { key: null })).status).toBe(401);
    const res = await rt.call("/api/usage?day=2026-01-01");
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: { code: "validation_failed", details: { issues: [{ path: "day" }] } },
    });
  });

  it("is documented with its answer's schema", async () => {
    const spec = (await (await fetch(`${rt.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; responses: object }>>;
      components: { schemas: Record<string, { required?: string[] }> };
    };
    const operation = spec.paths["/api/usage"]?.get;
    expect(operation?.operationId).toBe("getUsage");
    expect(JSON.stringify(operation?.responses)).toContain("#/components/schemas/Usage");
    expect(spec.components.schemas.QuotaUsage?.required).toEqual([
      "used",
      "limit",
      "remaining",
      "resetsAt",
    ]);
  });
});
