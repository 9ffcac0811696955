import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { invocation } from "../../../lib/invocation.js";
import { logger, printReadableLines, readableLine } from "../../../lib/log.js";
import { FakeOpenAI } from "../../support/fake-openai.js";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.js";

/**
 * What the local runtime prints (`npm start`): one readable line per request and per worker
 * invocation, naming the function of the manifest that served it; Powertools' JSON otherwise,
 * with that same function's name. The lines are read from stdout and stderr as written.
 */

const written: string[] = [];
const write = {
  out: process.stdout.write.bind(process.stdout),
  err: process.stderr.write.bind(process.stderr),
};
const capture =
  (through: (...args: unknown[]) => boolean) =>
  (chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = String(chunk);
    // The logger's lines are kept; vitest's own output passes.
    if (!/^(\{|\d\d:\d\d:\d\d )/.test(text)) return through(chunk, ...rest);
    written.push(...text.split("\n").filter(Boolean));
    return true;
  };

let rt: TestRuntime;
let model: FakeOpenAI;

beforeAll(async () => {
  model = await FakeOpenAI.start();
  model.fallback("chat", { text: "Pro costs $49 a month [1]." });
  Object.assign(process.env, {
    OPENAI_API_KEY: "fake-key",
    OPENAI_BASE_URL: model.baseURL,
    EMBEDDING_MODEL: "fake-embedding",
    LLM_MAX_RETRIES: "0",
  });
  process.stdout.write = capture(write.out as never) as typeof process.stdout.write;
  process.stderr.write = capture(write.err as never) as typeof process.stderr.write;
  rt = await startTestRuntime();
}, 60_000);
afterAll(async () => {
  await rt?.close();
  await model?.close();
  process.stdout.write = write.out;
  process.stderr.write = write.err;
});
afterEach(() => {
  printReadableLines(false);
  logger.setLogLevel("SILENT");
});

/** The lines written from now until `work` is done and the runtime's queues are idle. */
async function linesOf(work: () => Promise<unknown>): Promise<string[]> {
  const from = written.length;
  await work();
  await rt.runtime.queues.idle();
  return written.slice(from);
}

async function createSource(): Promise<string> {
  const res = await rt.call("/api/knowledge", {
    method: "POST",
    json: { text: "# Pricing\nPro costs $49 a month.", name: "Pricing" },
  });
  expect(res.status).toBe(200);
  return res.headers.get("x-request-id") ?? "";
}

async function chat(): Promise<string> {
  const res = await rt.call("/api/chat", {
    method: "POST",
    json: { message: "What does Pro cost?" },
  });
  expect(res.status).toBe(200);
  await res.text();
  return res.headers.get("x-request-id") ?? "";
}

const TIME = "\\d\\d:\\d\\d:\\d\\d";

describe("the local runtime's lines", () => {
  it("are one readable line per request, naming the function that served it", async () => {
    printReadableLines();
    logger.setLogLevel("INFO");
    let created = "";
    let chatted = "";
    const lines = await linesOf(async () => {
      created = await createSource();
      chatted = await chat();
    });
    const about = (id: string) => lines.filter((line) => line.includes(id));
    expect(about(created)).toEqual([
      expect.stringMatching(
        new RegExp(`^${TIME} POST /api/knowledge 200 \\d+ms knowledge-api req=${created}$`),
      ),
      expect.stringMatching(new RegExp(`^${TIME} index-worker 1 record ok \\d+ms req=${created}$`)),
    ]);
    // The model's usage, logged at INFO, is a detail: shown at DEBUG, not beside the request.
    expect(about(chatted)).toEqual([
      expect.stringMatching(
        new RegExp(`^${TIME} POST /api/chat 200 \\d+ms intel-api req=${chatted}$`),
      ),
    ]);
    expect(lines.filter((line) => line.startsWith("{"))).toEqual([]);
  });

  it("show an error's details on the lines below it", () => {
    const error = new Error("the table is gone", { cause: new Error("NoSuchTable") });
    logger.setLogLevel("INFO");
    printReadableLines();
    const lines = written.length;
    logger.error("unhandled error", { requestId: "req-1", error });
    const [head, ...below] = written.slice(lines).join("\n").split("\n");
    expect(head).toMatch(new RegExp(`^${TIME} ERROR unhandled error requestId=req-1$`));
    expect(below[0]).toBe("    error: Error: the table is gone");
    expect(below.some((line) => /^ {6}at .*logs\.test\.ts:\d+/.test(line))).toBe(true);
    expect(below).toContain("    cause: Error: NoSuchTable");
  });

  it("show INFO details only at DEBUG, and nothing when SILENT", async () => {
    printReadableLines();
    logger.setLogLevel("DEBUG");
    const chatted = await chat().then(async (id) => {
      await rt.runtime.queues.idle();
      return id;
    });
    expect(written.filter((line) => line.includes(chatted)).length).toBeGreaterThan(1);
    logger.setLogLevel("SILENT");
    const silent = await linesOf(() => createSource());
    expect(silent).toEqual([]);
  });

  it("are Powertools' JSON when not readable, with the function of each request and worker", async () => {
    logger.setLogLevel("INFO");
    let created = "";
    let chatted = "";
    const lines = await linesOf(async () => {
      created = await createSource();
      // After a worker's invocation: its context must not stay on the next request's lines.
      chatted = await chat();
    });
    const json = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const functionOf = (id: string, message: string) =>
      json
        .filter((l) => l.correlation_id === id && l.message === message)
        .map((l) => l.function_name);
    expect(functionOf(created, "request")).toEqual(["knowledge-api"]);
    expect(functionOf(created, "message handled")).toEqual(["index-worker"]);
    expect(functionOf(chatted, "request")).toEqual(["intel-api"]);
    expect(functionOf(chatted, "llm usage").length).toBeGreaterThan(0);
    expect(new Set(functionOf(chatted, "llm usage"))).toEqual(new Set(["intel-api"]));
  });

  it("are Powertools' JSON on AWS: a function's invocation carries its Lambda context", async () => {
    logger.setLogLevel("INFO");
    const from = written.length;
    const context = {
      functionName: "kb-intel-IndexWorker-abc",
      functionVersion: "$LATEST",
      invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:kb-intel-IndexWorker-abc",
      memoryLimitInMB: "1024",
      awsRequestId: "aws-request-1",
      logGroupName: "/aws/lambda/kb-intel-IndexWorker-abc",
      logStreamName: "stream",
      callbackWaitsForEmptyEventLoop: false,
      getRemainingTimeInMillis: () => 1000,
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
    await invocation(async () => logger.info("message handled", { outcome: "indexed" }))(
      {},
      context,
    );
    const [line] = written.slice(from);
    expect(JSON.parse(line ?? "")).toMatchObject({
      level: "INFO",
      message: "message handled",
      service: "kb-intel",
      function_name: "kb-intel-IndexWorker-abc",
      function_request_id: "aws-request-1",
      correlation_id: "aws-request-1",
    });
  });
});

describe("a readable line", () => {
  const base = { level: "INFO", timestamp: "2026-11-27T07:31:06.123Z", service: "kb-intel" };

  it("of a worker's invocation says its records, how many failed, and their correlation ids", () => {
    const line = {
      ...base,
      message: "invocation",
      function_name: "index-worker",
      records: 2,
      failed: 1,
      durationMs: 340,
      correlationIds: ["a", "b"],
    };
    expect(readableLine(line)).toMatch(
      new RegExp(`^${TIME} index-worker 2 records 1 failed 340ms req=a,b$`),
    );
    const scheduled = {
      ...base,
      message: "invocation",
      function_name: "watchdog",
      trigger: "schedule",
      ok: false,
      durationMs: 20,
    };
    expect(readableLine(scheduled)).toMatch(new RegExp(`^${TIME} watchdog schedule failed 20ms$`));
  });

  it("of anything else at WARN shows its keys, its function and its correlation id", () => {
    expect(
      readableLine({
        ...base,
        level: "WARN",
        message: "message failed",
        function_name: "crawl-worker",
        correlation_id: "req-9",
        receiveCount: 2,
        reason: "two words",
      }),
    ).toMatch(
      new RegExp(
        `^${TIME} WARN crawl-worker message failed receiveCount=2 reason="two words" req=req-9$`,
      ),
    );
    expect(readableLine({ ...base, message: "llm usage", operation: "chat" })).toBeUndefined();
    expect(readableLine({ ...base, message: "llm usage", operation: "chat" }, true)).toMatch(
      /INFO llm usage operation=chat$/,
    );
  });
});
