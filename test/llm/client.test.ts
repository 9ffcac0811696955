import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { DomainError } from "../../lib/errors.js";
import { createLlm } from "../../lib/llm/provider.js";
import { loadLlmSettings } from "../../lib/llm/settings.js";
import { logger } from "../../lib/log.js";
import { FakeOpenAI } from "../support/fake-openai.js";
import { llmFor } from "./helpers.js";

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await FakeOpenAI.start();
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const ask = [{ role: "user" as const, content: "Say hello" }];

/** The domain error a promise rejects with. */
async function domainError(promise: Promise<unknown>): Promise<DomainError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw new Error(`Expected a DomainError, got ${String(err)}`);
  return err;
}

async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const parts: string[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe("without an API key", () => {
  const { chat, embedder } = createLlm(loadLlmSettings({ LLM_MODEL: "m", EMBEDDING_MODEL: "e" }));

  it("answers 503 llm_unavailable for chat and streaming, without calling anyone", async () => {
    expect(chat.available).toBe(false);
    for (const call of [chat.complete(ask), chat.stream(ask)]) {
      const err = await domainError(call);
      expect(err.code).toBe("llm_unavailable");
    }
    expect(fake.requests).toHaveLength(0);
  });

  it("has no embedder, so retrieval stays lexical", () => {
    expect(embedder).toBeUndefined();
  });
});

describe("chat completions", () => {
  it("sends the model, the messages, a bounded output and the key", async () => {
    fake.enqueue("chat", { text: "Hello!" });
    const { chat } = llmFor(fake, { maxOutputTokens: 300 });
    const answer = await chat.complete(ask, { maxTokens: 5000 });
    expect(answer).toEqual({ text: "Hello!", finishReason: "stop", refusal: null });
    const [request] = fake.chatRequests();
    expect(request).toMatchObject({
      model: "fake-chat",
      messages: ask,
      max_completion_tokens: 300,
    });
    expect(fake.requests[0]?.headers.authorization).toBe("Bearer sk-test");
  });

  it("logs the token usage of each call", async () => {
    const info = vi.spyOn(logger, "info");
    fake.enqueue("chat", { text: "Hi" });
    await llmFor(fake).chat.complete(ask, { operation: "greeting" });
    expect(info).toHaveBeenCalledWith(
      "llm usage",
      expect.objectContaining({
        operation: "greeting",
        model: "fake-chat",
        attempts: 1,
        promptTokens: 42,
        completionTokens: 7,
        totalTokens: 49,
      }),
    );
    info.mockRestore();
  });

  it("retries a 429 as the provider's retry-after asks, then answers", async () => {
    fake.enqueue("chat", { status: 429, headers: { "retry-after-ms": "5" } }, { text: "Done" });
    const answer = await llmFor(fake).chat.complete(ask);
    expect(answer.text).toBe("Done");
    expect(fake.chatRequests()).toHaveLength(2);
  });

  it("retries 5xx with backoff up to LLM_MAX_RETRIES, then answers 503", async () => {
    fake.fallback("chat", { status: 500 });
    const err = await domainError(llmFor(fake, { maxRetries: 2 }).chat.complete(ask));
    expect(err.code).toBe("llm_unavailable");
    expect(fake.chatRequests()).toHaveLength(3);
    expect(err.message).not.toContain("Scripted");
  });

  it("gives up at once when retry-after is longer than the time left, and passes it on", async () => {
    fake.enqueue("chat", { status: 429, headers: { "retry-after": "120" } });
    const err = await domainError(llmFor(fake).chat.complete(ask));
    expect([err.code, err.retryAfterSeconds]).toEqual(["llm_unavailable", 120]);
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it("does not retry a request the provider rejects, and answers 502 llm_error", async () => {
    fake.enqueue("chat", { status: 400, message: "model secret-deployment not found" });
    const err = await domainError(llmFor(fake).chat.complete(ask));
    expect([err.code, err.details]).toEqual(["llm_error", { providerStatus: 400 }]);
    expect(JSON.stringify(err)).not.toContain("secret-deployment");
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it("answers 504 upstream_timeout when the model is slower than the budget", async () => {
    fake.enqueue("chat", { delayMs: 5000, reply: { text: "late" } });
    const err = await domainError(llmFor(fake, { timeoutMs: 150 }).chat.complete(ask));
    expect(err.code).toBe("upstream_timeout");
  });

  it("reports a refusal and a cut-off answer as they are", async () => {
    fake.enqueue(
      "chat",
      { refusal: "I can't help with that" },
      { text: "Trunc", finishReason: "length" },
    );
    const { chat } = llmFor(fake);
    expect((await chat.complete(ask)).refusal).toBe("I can't help with that");
    expect((await chat.complete(ask)).finishReason).toBe("length");
  });
});

describe("streaming", () => {
  it("yields the answer in pieces and asks for usage", async () => {
    fake.enqueue("chat", { text: "Hello there, friend", deltas: ["Hello", " there,", " friend"] });
    const parts = await collect(await llmFor(fake).chat.stream(ask));
    expect(parts).toEqual(["Hello", " there,", " friend"]);
    expect(fake.chatRequests()[0]).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it("retries before the stream starts", async () => {
    fake.enqueue("chat", { status: 503 }, { text: "ok" });
    expect((await collect(await llmFor(fake).chat.stream(ask))).join("")).toBe("ok");
    expect(fake.chatRequests()).toHaveLength(2);
  });

  it("fails the iteration with 503 when the connection drops mid-answer", async () => {
    fake.enqueue("chat", { text: "a b c d e f", failAfter: 2 });
    const stream = await llmFor(fake).chat.stream(ask);
    const err = await domainError(collect(stream));
    expect(err.code).toBe("llm_unavailable");
  });

  it("fails with 504 when the answer is still streaming at the deadline", async () => {
    fake.enqueue("chat", { text: "slow answer here", deltaDelayMs: 100 });
    const stream = await llmFor(fake, { timeoutMs: 250 }).chat.stream(ask);
    const err = await domainError(collect(stream));
    expect(err.code).toBe("upstream_timeout");
  });
});
