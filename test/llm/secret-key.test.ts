import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { llmOf } from "../../lib/compose/llm.js";
import { loadConfig } from "../../lib/config.js";
import { DomainError } from "../../lib/errors.js";
import { FakeOpenAI } from "../support/fake-openai.js";
import { FakeSecretsManager } from "../support/fake-secrets.js";

/**
 * The model key on AWS: read from Secrets Manager at run time by the functions that call the
 * model (through the composition root, as they are built), cached, and replaced after a rotation
 * without a deploy. Locally it still comes from OPENAI_API_KEY.
 */
let openai: FakeOpenAI;
let secrets: FakeSecretsManager;

beforeAll(async () => {
  [openai, secrets] = await Promise.all([FakeOpenAI.start(), FakeSecretsManager.start()]);
  process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = secrets.endpoint;
});
afterAll(async () => {
  delete process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER;
  await Promise.all([openai.close(), secrets.close()]);
});
afterEach(() => {
  vi.useRealTimers();
});
beforeEach(() => {
  openai.reset();
  secrets.reads.length = 0;
  secrets.secrets.clear();
});

const configOf = (env: Record<string, string>) =>
  loadConfig({
    TABLE_NAME: "t",
    BUCKET_NAME: "b",
    INDEX_QUEUE_URL: "http://127.0.0.1/index",
    CRAWL_QUEUE_URL: "http://127.0.0.1/crawl",
    CHECKS_QUEUE_URL: "http://127.0.0.1/checks",
    WEBHOOKS_QUEUE_URL: "http://127.0.0.1/webhooks",
    OPENAI_BASE_URL: openai.baseURL,
    LLM_MODEL: "fake-chat",
    EMBEDDING_MODEL: "fake-embed",
    ...env,
  });

/** The key the fake model server was last called with. */
const lastKey = () => String(openai.requests.at(-1)?.headers.authorization);
const chat = (llm: ReturnType<typeof llmOf>) =>
  llm.chat.complete([{ role: "user", content: "Hi" }]);

describe("the model key from Secrets Manager", () => {
  it("is read at run time, cached, and a rotated key is used once the cache expires", async () => {
    // The cache's clock (Date) stands still unless the test moves it: the cache age passes when
    // the test says, however slow the machine.
    vi.useFakeTimers({ toFake: ["Date"] });
    secrets.secrets.set("kb-intel/openai", "sk-first");
    const llm = llmOf(
      configOf({ LLM_API_KEY_SECRET: "kb-intel/openai", LLM_API_KEY_CACHE_SECONDS: "1" }),
    );
    expect(llm.chat.available).toBe(true);
    expect(secrets.reads).toEqual([]);

    await chat(llm);
    expect(lastKey()).toBe("Bearer sk-first");
    await llm.embedder?.embed(["pricing"]);
    expect(lastKey()).toBe("Bearer sk-first");
    expect(secrets.reads).toEqual(["kb-intel/openai"]);

    // Rotation: within the cache age the old key is still used, after it the new one.
    secrets.secrets.set("kb-intel/openai", "sk-rotated");
    await chat(llm);
    expect(lastKey()).toBe("Bearer sk-first");
    vi.setSystemTime(Date.now() + 1_100);
    await chat(llm);
    expect(lastKey()).toBe("Bearer sk-rotated");
    expect(secrets.reads).toHaveLength(2);
  });

  it("wins over OPENAI_API_KEY, which a function with the secret never uses", async () => {
    secrets.secrets.set("key", "sk-secret");
    const llm = llmOf(configOf({ LLM_API_KEY_SECRET: "key", OPENAI_API_KEY: "sk-env" }));
    await chat(llm);
    expect(lastKey()).toBe("Bearer sk-secret");
  });

  it("answers llm_unavailable, not a 500, when the secret cannot be read", async () => {
    const llm = llmOf(configOf({ LLM_API_KEY_SECRET: "missing" }));
    const failed = await chat(llm).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(DomainError);
    expect(failed).toMatchObject({ code: "llm_unavailable" });
    expect(openai.requests).toEqual([]);
    expect(secrets.reads).toContain("missing");
  });

  it("comes from OPENAI_API_KEY locally, without touching Secrets Manager", async () => {
    await chat(llmOf(configOf({ OPENAI_API_KEY: "sk-local" })));
    expect(lastKey()).toBe("Bearer sk-local");
    expect(secrets.reads).toEqual([]);
    expect(llmOf(configOf({})).chat.available).toBe(false);
  });
});
