import { createLlm, type LlmTuning } from "../../lib/llm/provider.js";
import { type LlmSettings, loadLlmSettings } from "../../lib/llm/settings.js";
import type { FakeOpenAI } from "../support/fake-openai.js";

/** Model clients pointed at the fake server, with backoffs short enough for tests. */
export function llmFor(
  fake: FakeOpenAI,
  overrides: Partial<LlmSettings> = {},
  tuning: LlmTuning = {},
) {
  const settings = {
    ...loadLlmSettings({
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: fake.baseURL,
      LLM_MODEL: "fake-chat",
      EMBEDDING_MODEL: "fake-embed",
    }),
    ...overrides,
  };
  return createLlm(settings, { retry: { baseDelayMs: 1, maxDelayMs: 5 }, ...tuning });
}
