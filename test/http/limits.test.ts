import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAI } from "../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

let rt: TestRuntime;
let model: FakeOpenAI;

beforeAll(async () => {
  model = await FakeOpenAI.start();
  Object.assign(process.env, {
    RATE_LIMIT_PER_MINUTE: "40",
    QUOTA_CRAWL_PAGES_PER_DAY: "15",
    QUOTA_UPLOAD_BYTES_PER_DAY: "100",
    QUOTA_COMPETITOR_CHECKS_PER_DAY: "1",
    QUOTA_MODEL_CALLS_PER_DAY: "1",
    OPENAI_API_KEY: "fake-key",
    OPENAI_BASE_URL: model.baseURL,
  });
  rt = await startTestRuntime();
});
afterAll(async () => {
  await rt.close();
  await model.close();
});

interface ErrorBody {
  error: { code: string; message: string; details: Record<string, unknown> };
}

describe("daily quotas", () => {
  it("refuses a crawl whose page cap does not fit what is left today, naming the quota", async () => {
    const crawl = (maxPages: number) =>
      rt.call("/api/knowledge/crawl", {
        method: "POST",
        json: { seedUrl: "https://example.invalid/", maxPages },
      });
    // Together: a crawl that ends gives back what it did not index, so one alone may have room again.
    const answers = await Promise.all([crawl(10), crawl(10)]);
    expect(answers.map((res) => res.status).sort()).toEqual([200, 429]);
    const refused = answers.find((res) => res.status === 429) as Response;
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    const body = (await refused.json()) as ErrorBody;
    expect(body.error).toMatchObject({
      code: "quota_exceeded",
      details: { quota: "crawl_pages", limit: 15, requested: 10 },
    });
    expect(body.error.message).toContain("crawl pages");
    expect((await crawl(5)).status).toBe(200);
  });

  it("counts uploaded bytes, presigned or multipart, against one quota", async () => {
    const presign = (bytes: number) =>
      rt.call("/api/knowledge/uploads", {
        method: "POST",
        json: { filename: "a.txt", contentType: "text/plain", bytes },
      });
    expect((await presign(60)).status).toBe(200);
    const form = new FormData();
    form.set("file", new File(["x".repeat(50)], "b.txt", { type: "text/plain" }));
    const multipart = await rt.call("/api/knowledge", { method: "POST", body: form });
    expect(multipart.status).toBe(429);
    expect(((await multipart.json()) as ErrorBody).error.details).toMatchObject({
      quota: "upload_bytes",
    });
    // Nothing was stored for the refused file.
    const files = (await (await rt.call("/api/knowledge?type=file")).json()) as {
      sources: unknown[];
    };
    expect(files.sources).toHaveLength(1);
  });

  it("counts competitor checks", async () => {
    const added = await rt.call("/api/intel/competitors", {
      method: "POST",
      json: { domain: "example.invalid" },
    });
    const { id } = (await added.json()) as { id: string };
    const first = await rt.call(`/api/intel/competitors/${id}/check`, { method: "POST" });
    expect(first.status).toBe(200);
    const second = await rt.call(`/api/intel/competitors/${id}/check`, { method: "POST" });
    expect(second.status).toBe(429);
    const queued = await rt.call("/api/intel/competitors/check-all", { method: "POST" });
    expect(queued.status).toBe(429);
  });

  it("counts answers the model writes, and not questions nothing could answer", async () => {
    const ask = () =>
      rt.call("/api/chat", { method: "POST", json: { message: "What do we sell?" } });
    // No passage to ground an answer: the service says so, without a model call.
    expect((await ask()).status).toBe(200);
    const source = await rt.call("/api/knowledge", {
      method: "POST",
      json: { text: "# Products\nWe sell analytics software.", name: "Products" },
    });
    const { id } = (await source.json()) as { id: string };
    for (let i = 0; i < 20; i++) {
      const state = (await (await rt.call(`/api/knowledge/${id}`)).json()) as { status?: string };
      if (state.status === "indexed") break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    model.fallback("chat", { text: "Analytics software." });
    expect((await ask()).status).toBe(200);
    const refused = await ask();
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as ErrorBody).error.details).toMatchObject({
      quota: "model_calls",
      limit: 1,
    });
    expect(model.chatRequests()).toHaveLength(1);
  });

  it("gives back the pages of crawls that fetched nothing, so they do not spend the day", async () => {
    const workspace = await rt.runtime.keys.createWorkspace("Unresolvable");
    const { key } = await rt.runtime.keys.createKey(workspace.id);
    for (let i = 0; i < 4; i++) {
      const started = await rt.call("/api/knowledge/crawl", {
        method: "POST",
        key,
        json: { seedUrl: "https://example.invalid/", maxPages: 15 },
      });
      expect(started.status).toBe(200);
      const { crawlId } = (await started.json()) as { crawlId: string };
      await expect
        .poll(async () => {
          const crawl = await rt.call(`/api/knowledge/crawl/${crawlId}`, { key });
          return ((await crawl.json()) as { status: string }).status;
        })
        .toBe("completed");
    }
  });

  it("keeps each workspace's quotas apart", async () => {
    const res = await rt.call("/api/knowledge/crawl", {
      method: "POST",
      key: rt.otherKey,
      json: { seedUrl: "https://example.invalid/", maxPages: 15 },
    });
    expect(res.status).toBe(200);
  });
});

describe("the per-workspace rate limit", () => {
  it("answers 429 with Retry-After past the limit, for that workspace only", async () => {
    let limited: Response | undefined;
    for (let i = 0; i < 100 && !limited; i++) {
      const res = await rt.call("/api/knowledge?limit=1");
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(200);
    }
    expect(limited?.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await limited?.json()).toMatchObject({
      error: { code: "rate_limited", details: { limit: 40, windowSeconds: 60 } },
    });
    expect((await rt.call("/api/knowledge?limit=1", { key: rt.otherKey })).status).toBe(200);
  });
});
