import { FakeOpenAI } from "../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../support/runtime.js";

/**
 * The local runtime as the hardening suites need it: limits too large to get in the way (the
 * suites prove other things; test/http/limits.test.ts proves the limits), the fake model behind
 * every model feature, and the private-URL switch in the state a suite asks for.
 */

export interface Hardened {
  rt: TestRuntime;
  model: FakeOpenAI;
  close(): Promise<void>;
}

const ROOMY = "1000000000";

export async function startHardened(
  options: { allowPrivate?: boolean; env?: Record<string, string> } = {},
): Promise<Hardened> {
  const model = await FakeOpenAI.start();
  Object.assign(process.env, {
    ALLOW_PRIVATE_URLS: options.allowPrivate ? "true" : "false",
    RATE_LIMIT_PER_MINUTE: ROOMY,
    QUOTA_CRAWL_PAGES_PER_DAY: ROOMY,
    QUOTA_UPLOAD_BYTES_PER_DAY: ROOMY,
    QUOTA_MODEL_CALLS_PER_DAY: ROOMY,
    QUOTA_COMPETITOR_CHECKS_PER_DAY: ROOMY,
    OPENAI_API_KEY: "fake-key",
    OPENAI_BASE_URL: model.baseURL,
    EMBEDDING_MODEL: "fake-embedding",
    LLM_MAX_RETRIES: "0",
    CRAWL_POLITENESS_MS: "0",
    // A crawl's watchdog message waits this long in the queue, and queues.idle() waits for it.
    CRAWL_WATCH_SECONDS: "1",
    CHECK_POLITENESS_MS: "0",
    ...options.env,
  });
  const rt = await startTestRuntime();
  return {
    rt,
    model,
    async close() {
      await rt.close();
      await model.close();
    },
  };
}
