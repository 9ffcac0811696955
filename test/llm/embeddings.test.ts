import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { batches, spaceTag } from "../../lib/llm/embeddings.js";
import { createLlm } from "../../lib/llm/provider.js";
import { loadLlmSettings } from "../../lib/llm/settings.js";
import { FakeOpenAI, fakeEmbedding } from "../support/fake-openai.js";
import { llmFor } from "./helpers.js";

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await FakeOpenAI.start();
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe("batches", () => {
  const limits = { maxItems: 3, maxChars: 10, maxInputChars: 100, concurrency: 1 };

  it("cuts runs at the item limit and the character limit, keeping order", () => {
    expect(batches(["a", "b", "c", "d"], limits)).toEqual([["a", "b", "c"], ["d"]]);
    expect(batches(["12345", "123456", "1"], limits)).toEqual([["12345"], ["123456", "1"]]);
  });

  it("gives an input larger than a batch a run of its own", () => {
    expect(batches(["a", "x".repeat(50), "b"], limits)).toEqual([["a"], ["x".repeat(50)], ["b"]]);
  });
});

describe("Embedder", () => {
  it("exists only with a key and an embedding model", () => {
    expect(createLlm(loadLlmSettings({ OPENAI_API_KEY: "k" })).embedder).toBeUndefined();
    expect(llmFor(fake).embedder?.space).toEqual({ model: "fake-embed", dimensions: undefined });
  });

  it("embeds in batches within the limits and returns unit vectors in input order", async () => {
    const { embedder } = llmFor(fake);
    const texts = Array.from({ length: 300 }, (_, i) => `chunk number ${i} about topic ${i % 7}`);
    const vectors = await embedder?.embed(texts);
    expect(vectors).toHaveLength(300);
    expect(fake.embeddingRequests().map((r) => (r.input as string[]).length)).toEqual([
      128, 128, 44,
    ]);
    expect(fake.embeddingRequests()[0]).toMatchObject({
      model: "fake-embed",
      encoding_format: "float",
    });
    expect(fake.embeddingRequests()[0]).not.toHaveProperty("dimensions");
    const expected = fakeEmbedding(texts[299] ?? "", fake.nativeDimensions, new Map());
    expect(Array.from(vectors?.[299] ?? []).map((x) => x.toFixed(5))).toEqual(
      expected.map((x) => x.toFixed(5)),
    );
    for (const v of vectors ?? []) expect(norm(v)).toBeCloseTo(1, 5);
  });

  it("asks for the configured dimensions and checks that they came back", async () => {
    const { embedder } = llmFor(fake, { embeddingDimensions: 32 });
    const [vector] = (await embedder?.embed(["hello world"])) ?? [];
    expect(vector).toHaveLength(32);
    expect(fake.embeddingRequests()[0]?.dimensions).toBe(32);
    fake.enqueue("embeddings", { vectors: [[1, 0, 0]] });
    await expect(embedder?.embed(["hello"])).rejects.toMatchObject({
      code: "llm_error",
    });
  });

  it("caps over-long inputs and never sends an empty one", async () => {
    const { embedder } = llmFor(fake, {}, { batch: { maxInputChars: 10 } });
    await embedder?.embed(["a very long text indeed", "   "]);
    expect(fake.embeddingRequests()[0]?.input).toEqual(["a very lon", " "]);
  });

  it("retries a rate-limited batch and fails clearly when the provider stays down", async () => {
    const { embedder } = llmFor(fake);
    fake.enqueue("embeddings", { status: 429, headers: { "retry-after-ms": "1" } });
    expect(await embedder?.embed(["x"])).toHaveLength(1);
    fake.fallback("embeddings", { status: 500 });
    await expect(embedder?.embed(["x"])).rejects.toMatchObject({
      code: "llm_unavailable",
    });
  });
});

describe("spaceTag", () => {
  it("differs whenever the model or the dimensions differ, and is safe in a key", () => {
    const tags = [
      spaceTag({ model: "text-embedding-3-small", dimensions: undefined }),
      spaceTag({ model: "text-embedding-3-small", dimensions: 512 }),
      spaceTag({ model: "text-embedding-3-large", dimensions: 512 }),
      spaceTag({ model: "BAAI/bge-m3", dimensions: undefined }),
      spaceTag({ model: "BAAI_bge-m3", dimensions: undefined }),
    ];
    expect(new Set(tags).size).toBe(tags.length);
    for (const tag of tags) expect(tag).toMatch(/^[A-Za-z0-9._-]+$/);
  });
});
