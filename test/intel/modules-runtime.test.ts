import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAI } from "../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

let rt: TestRuntime;
let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await FakeOpenAI.start();
  // Read when the intel function loads, as on AWS.
  Object.assign(process.env, {
    OPENAI_API_KEY: "sk-test",
    OPENAI_BASE_URL: fake.baseURL,
    LLM_MODEL: "fake-chat",
  });
  rt = await startTestRuntime();
});
afterAll(async () => {
  await rt.close();
  await fake.close();
});

const post = (path: string, json: unknown) => rt.call(path, { method: "POST", json });

async function indexed(id: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const source = (await (await rt.call(`/api/knowledge/${id}`)).json()) as { status: string };
    if (source.status !== "indexing") return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`source ${id} never finished indexing`);
}

describe("intel modules and artifacts through the local runtime", () => {
  it("generates from the indexed knowledge base, then saves and lists the artifact", async () => {
    await rt.call("/api/brand", {
      method: "PUT",
      json: { name: "Acme Analytics", description: "Product analytics for B2B SaaS teams." },
    });
    const source = (await (
      await post("/api/knowledge", {
        text: "# Customers\nHeads of growth lose days to manual reporting.",
        name: "Customer research",
      })
    ).json()) as { id: string };
    await indexed(source.id);

    const res = await post("/api/intel/persona", { segment: "Heads of growth" });
    expect(res.status).toBe(200);
    expect(fake.prompt()).toContain("Heads of growth lose days to manual reporting.");
    const { artifact } = (await res.json()) as { artifact: { title: string } };

    const saved = await post("/api/artifacts", artifact);
    expect(saved.status).toBe(201);
    const { artifacts } = (await (await rt.call("/api/artifacts?module=persona")).json()) as {
      artifacts: Array<{ title: string }>;
    };
    expect(artifacts.map((a) => a.title)).toEqual([artifact.title]);
    const theirs = await rt.call("/api/artifacts", { key: rt.otherKey });
    expect(await theirs.json()).toEqual({ artifacts: [], nextCursor: null });
  });

  it("answers unknown modules with the list, and leaves competitor routes to their function", async () => {
    const unknown = await post("/api/intel/swot", {});
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      error: {
        details: { modules: ["persona", "competitor", "gtm", "journey", "messaging", "kpi"] },
      },
    });
    const tracked = await post("/api/intel/competitors", { domain: "rival-labs.com" });
    expect(tracked.status).toBe(201);
    expect((await rt.call("/api/intel/events")).status).toBe(200);
  });
});
