import { describe, expect, it } from "vitest";
import { loadLlmSettings } from "../../lib/llm/settings.js";

describe("loadLlmSettings", () => {
  it("works with nothing set: no key, no embeddings, sensible bounds", () => {
    expect(loadLlmSettings({})).toEqual({
      apiKey: undefined,
      baseURL: undefined,
      model: "gpt-4o-mini",
      embeddingModel: undefined,
      embeddingDimensions: undefined,
      embeddingMinSimilarity: 0.3,
      timeoutMs: 20_000,
      maxRetries: 2,
      maxOutputTokens: 2000,
    });
  });

  it("treats empty variables as unset", () => {
    const settings = loadLlmSettings({
      OPENAI_API_KEY: " ",
      OPENAI_BASE_URL: "",
      EMBEDDING_MODEL: "",
    });
    expect([settings.apiKey, settings.baseURL, settings.embeddingModel]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("reads a compatible server's settings", () => {
    const settings = loadLlmSettings({
      OPENAI_API_KEY: "ollama",
      OPENAI_BASE_URL: "http://localhost:11434/v1",
      LLM_MODEL: "llama3.1",
      EMBEDDING_MODEL: "nomic-embed-text",
      EMBEDDING_DIMENSIONS: "768",
    });
    expect(settings).toMatchObject({
      baseURL: "http://localhost:11434/v1",
      model: "llama3.1",
      embeddingModel: "nomic-embed-text",
      embeddingDimensions: 768,
    });
  });

  it.each([
    ["OPENAI_BASE_URL", "ftp://example.com"],
    ["OPENAI_BASE_URL", "not a url"],
    ["EMBEDDING_DIMENSIONS", "-1"],
    ["EMBEDDING_DIMENSIONS", "12.5"],
    ["LLM_TIMEOUT_MS", "0"],
  ])("refuses %s=%s with a message naming it", (name, value) => {
    expect(() => loadLlmSettings({ [name]: value })).toThrow(
      new RegExp(`Invalid configuration: ${name}`),
    );
  });
});
