import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECK_CAPACITY } from "../../lib/competitors/capacity.js";
import { sweepAll } from "../../lib/competitors/sweep.js";
import { refreshServices } from "../../lib/compose/refresh.js";
import { loadConfig, quotaLimits } from "../../lib/config.js";
import { persona } from "../../lib/intel/modules/persona.js";
import { runDueRefreshes } from "../../lib/knowledge/refresh/run.js";
import { slotOf } from "../../lib/knowledge/sources/schedule.js";
import { Quotas, scheduledCharge } from "../../lib/limits/quotas.js";
import { parseStrict, strictJsonSchema } from "../../lib/llm/strict-mode.js";
import { createStores } from "../../lib/store/clients.js";
import { sampleFromSchema } from "../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";
import { htmlPage, prose, respond, type Site, startSite } from "../support/sites.js";

/**
 * Issue 26, item 4, on the whole local runtime: every kind of work moves its counter in
 * GET /api/usage (reindexes, URL adds, scheduled refreshes, sweep checks), and what a workspace
 * holds is capped (409 `limit_reached`, nothing created, race-safe, a delete frees a slot).
 * Each case runs in a workspace of its own.
 */

const SOURCES = 8;
const COMPETITORS = 6;
const ARTIFACTS = 4;
const CHECKS = 3;
const REINDEXES = 2;

let rt: TestRuntime;
let site: Site;

beforeAll(async () => {
  site = await startSite({
    "/page": respond(htmlPage("Pricing", prose("pricing"))),
    "/other": respond(htmlPage("Other", prose("other"))),
  });
  Object.assign(process.env, {
    ALLOW_PRIVATE_URLS: "true",
    QUOTA_REINDEXES_PER_DAY: String(REINDEXES),
    QUOTA_COMPETITOR_CHECKS_PER_DAY: String(CHECKS),
    MAX_SOURCES_PER_WORKSPACE: String(SOURCES),
    MAX_COMPETITORS_PER_WORKSPACE: String(COMPETITORS),
    MAX_ARTIFACTS_PER_WORKSPACE: String(ARTIFACTS),
  });
  rt = await startTestRuntime();
}, 60_000);
afterAll(async () => {
  await rt?.close();
  await site?.close();
});

interface Usage {
  quotas: Record<string, { used: number; limit: number }>;
  limits: Record<string, { used: number; limit: number; remaining: number }>;
}
interface ErrorBody {
  error: { code: string; message: string; details: Record<string, unknown> };
}

async function workspace(name: string) {
  const ws = await rt.runtime.keys.createWorkspace(name);
  return { id: ws.id, key: (await rt.runtime.keys.createKey(ws.id)).key };
}
const usage = async (key: string) => (await (await rt.call("/api/usage", { key })).json()) as Usage;
const post = (key: string, path: string, json?: unknown) =>
  rt.call(path, { method: "POST", key, ...(json === undefined ? {} : { json }) });
const addText = (key: string, text: string) => post(key, "/api/knowledge", { text });
const idOf = async (res: Response) => ((await res.json()) as { id: string }).id;

async function settled(key: string, id: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const { status } = (await (await rt.call(`/api/knowledge/${id}`, { key })).json()) as {
      status: string;
    };
    if (status !== "indexing") return status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`source ${id} still indexing`);
}

describe("work counted against the daily quotas", () => {
  it("counts each reindex when it is accepted, and refuses one past the quota naming it", async () => {
    const { key } = await workspace("Reindexes");
    const id = await idOf(await addText(key, "# Notes\nReindexed twice."));
    expect((await usage(key)).quotas.upload_bytes?.used).toBe(
      Buffer.byteLength("# Notes\nReindexed twice."),
    );

    for (let i = 0; i < REINDEXES; i++) {
      expect((await post(key, `/api/knowledge/${id}/reindex`)).status).toBe(200);
    }
    expect((await usage(key)).quotas.reindexes).toMatchObject({ used: REINDEXES });

    const refused = await post(key, `/api/knowledge/${id}/reindex`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(((await refused.json()) as ErrorBody).error).toMatchObject({
      code: "quota_exceeded",
      details: { quota: "reindexes", limit: REINDEXES },
    });
    expect((await usage(key)).quotas.reindexes?.used).toBe(REINDEXES);
  });

  it("counts a URL added, added again (a refresh) and reindexed as a page each", async () => {
    const { key } = await workspace("Known URL");
    const url = `${site.origin}/page`;
    const first = await post(key, "/api/knowledge", { url });
    const id = await idOf(first);
    await settled(key, id);
    const again = (await (await post(key, "/api/knowledge", { url })).json()) as {
      created: boolean;
    };
    expect(again.created).toBe(false);
    await settled(key, id);
    expect((await post(key, `/api/knowledge/${id}/reindex`)).status).toBe(200);

    const { quotas } = await usage(key);
    expect(quotas.crawl_pages?.used).toBe(3);
    // A URL source's reindex is a page, not a reindex of stored content.
    expect(quotas.reindexes?.used).toBe(0);
  });

  it("counts a scheduled refresh run, charged by the scheduler", async () => {
    const { key } = await workspace("Scheduled");
    const id = await idOf(
      await post(key, "/api/knowledge", { url: `${site.origin}/other`, refresh: "daily" }),
    );
    expect(await settled(key, id)).toBe("indexed");
    const before = (await usage(key)).quotas.crawl_pages?.used ?? 0;

    const at = new Date();
    at.setUTCHours(slotOf(id, "daily"), 5, 0, 0);
    const run = await runDueRefreshes(refreshServices(loadConfig()), at);
    expect(run.sources).toBeGreaterThanOrEqual(1);
    expect((await usage(key)).quotas.crawl_pages?.used).toBe(before + 1);
  });

  it("counts each check the nightly sweep queues, and skips those past the quota", async () => {
    const { key } = await workspace("Swept");
    for (let i = 0; i < CHECKS + 2; i++) {
      const added = await post(key, "/api/intel/competitors", {
        domain: `rival${i}.example`,
        // Due every hour, whatever the hour the test runs in.
        cadence: "hourly",
      });
      expect(added.status).toBe(201);
    }
    const config = loadConfig();
    const { table, checksQueue } = createStores(config);
    const quotas = new Quotas(table, quotaLimits(config));
    const admit = scheduledCharge(quotas, "competitor_checks", "competitor sweep check");
    const queued = await sweepAll(table, checksQueue, CHECK_CAPACITY, admit);

    expect((await usage(key)).quotas.competitor_checks?.used).toBe(CHECKS);
    // This file's only competitors so far: the two past the quota were skipped, not queued.
    expect(queued).toBe(CHECKS);
  });
});

const artifact = (title: string) => ({
  module: "persona",
  title,
  inputs: { segment: "Heads of growth" },
  output: parseStrict(persona.output, sampleFromSchema(strictJsonSchema(persona.output))).data,
  citations: [],
});

describe("caps on what a workspace holds", () => {
  it("refuses the source past the cap with 409 limit_reached, creates nothing, spends nothing", async () => {
    const { key } = await workspace("Sources cap");
    for (let i = 0; i < SOURCES; i++) expect((await addText(key, `Text ${i}`)).status).toBe(200);
    const spent = (await usage(key)).quotas.upload_bytes?.used;

    const refused = await addText(key, "One too many");
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as ErrorBody).error).toMatchObject({
      code: "limit_reached",
      details: { cap: "sources", limit: SOURCES },
    });
    const url = await post(key, "/api/knowledge", { url: `${site.origin}/page` });
    expect(url.status).toBe(409);
    const list = (await (await rt.call("/api/knowledge?limit=100", { key })).json()) as {
      sources: unknown[];
    };
    expect(list.sources).toHaveLength(SOURCES);
    const after = await usage(key);
    expect(after.limits.sources).toEqual({ used: SOURCES, limit: SOURCES, remaining: 0 });
    // Refused creates gave their charges back.
    expect(after.quotas.upload_bytes?.used).toBe(spent);
    expect(after.quotas.crawl_pages?.used).toBe(0);
  });

  it("lets exactly the free slots through when creates race for them, and a delete frees one", async () => {
    const { key } = await workspace("Sources race");
    const held = SOURCES - 5;
    const ids: string[] = [];
    for (let i = 0; i < held; i++) ids.push(await idOf(await addText(key, `Held ${i}`)));

    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => addText(key, `Racing ${i}`)),
    );
    const statuses = answers.map((res) => res.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 409)).toHaveLength(15);
    const list = (await (await rt.call("/api/knowledge?limit=100", { key })).json()) as {
      sources: unknown[];
    };
    expect(list.sources).toHaveLength(SOURCES);
    expect((await usage(key)).limits.sources?.used).toBe(SOURCES);

    expect((await addText(key, "Still full")).status).toBe(409);
    await settled(key, ids[0] as string);
    expect((await rt.call(`/api/knowledge/${ids[0]}`, { method: "DELETE", key })).status).toBe(204);
    expect((await usage(key)).limits.sources?.used).toBe(SOURCES - 1);
    expect((await addText(key, "In the freed slot")).status).toBe(200);
    expect((await addText(key, "Full again")).status).toBe(409);
  });

  it("caps competitors", async () => {
    const { key } = await workspace("Competitors cap");
    const ids: string[] = [];
    for (let i = 0; i < COMPETITORS; i++) {
      const res = await post(key, "/api/intel/competitors", { domain: `c${i}.example` });
      expect(res.status).toBe(201);
      ids.push(await idOf(res));
    }
    const refused = await post(key, "/api/intel/competitors", { domain: "extra.example" });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as ErrorBody).error).toMatchObject({
      code: "limit_reached",
      details: { cap: "competitors", limit: COMPETITORS },
    });
    // Nothing of it was kept: not the competitor, nor the claim of its domain.
    const list = (await (await rt.call("/api/intel/competitors?limit=100", { key })).json()) as {
      competitors: unknown[];
    };
    expect(list.competitors).toHaveLength(COMPETITORS);
    expect((await usage(key)).limits.competitors?.used).toBe(COMPETITORS);

    const gone = await rt.call(`/api/intel/competitors/${ids[0]}`, { method: "DELETE", key });
    expect(gone.status).toBe(204);
    expect((await post(key, "/api/intel/competitors", { domain: "extra.example" })).status).toBe(
      201,
    );
  });

  it("caps saved artifacts", async () => {
    const { key } = await workspace("Artifacts cap");
    const ids: string[] = [];
    for (let i = 0; i < ARTIFACTS; i++) {
      const res = await post(key, "/api/artifacts", artifact(`Persona ${i}`));
      expect(res.status).toBe(201);
      ids.push(await idOf(res));
    }
    const refused = await post(key, "/api/artifacts", artifact("One too many"));
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as ErrorBody).error).toMatchObject({
      code: "limit_reached",
      details: { cap: "artifacts", limit: ARTIFACTS },
    });
    const list = (await (await rt.call("/api/artifacts?limit=100", { key })).json()) as {
      artifacts: unknown[];
    };
    expect(list.artifacts).toHaveLength(ARTIFACTS);
    expect((await usage(key)).limits.artifacts).toEqual({
      used: ARTIFACTS,
      limit: ARTIFACTS,
      remaining: 0,
    });
    expect((await rt.call(`/api/artifacts/${ids[0]}`, { method: "DELETE", key })).status).toBe(204);
    expect((await post(key, "/api/artifacts", artifact("In the freed slot"))).status).toBe(201);
  });

  it("caps webhook endpoints at 20", async () => {
    const { key } = await workspace("Webhooks cap");
    const hook = (i: number) => ({ url: `${site.origin}/hook/${i}`, events: ["source.indexed"] });
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => post(key, "/api/webhooks", hook(i))),
    );
    expect(answers.filter((res) => res.status === 201)).toHaveLength(20);
    const refused = answers.find((res) => res.status !== 201) as Response;
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as ErrorBody).error).toMatchObject({
      code: "limit_reached",
      details: { cap: "webhooks", limit: 20 },
    });
    expect((await usage(key)).limits.webhooks).toEqual({ used: 20, limit: 20, remaining: 0 });
  });
});
