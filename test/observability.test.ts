import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { logger } from "../lib/log.js";
import { IndexMessage, recordHandler } from "../lib/store/queue.js";
import { startTestRuntime, type TestRuntime } from "./support/runtime.js";

/**
 * What an operator reads, as the service writes it: Powertools Logger's JSON lines and the EMF
 * documents of Powertools Metrics, both on stdout. Here the structured fields are the outcome.
 */
vi.hoisted(() => {
  // The suite turns metrics off (vitest.config.ts); this file reads them.
  process.env.POWERTOOLS_METRICS_DISABLED = "false";
});

type Line = Record<string, unknown>;
/** How long a line may take to appear after the source shows indexed (a loaded machine). */
const WAIT = { timeout: 15_000, interval: 50 };
const lines: Line[] = [];
const write = process.stdout.write.bind(process.stdout);
let rt: TestRuntime;

beforeAll(async () => {
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    // JSON lines (the logger's, EMF) are kept here rather than printed; anything else passes.
    const text = String(chunk);
    if (!text.startsWith("{")) return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
    for (const line of text.split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Line);
    return true;
  }) as typeof process.stdout.write;
  logger.setLogLevel("INFO");
  rt = await startTestRuntime();
});
afterAll(async () => {
  await rt?.close();
  logger.setLogLevel("SILENT");
  process.stdout.write = write;
});

async function indexedSource(): Promise<{ id: string; requestId: string }> {
  const res = await rt.call("/api/knowledge", {
    method: "POST",
    json: { text: "# Pricing\nPro costs $49 a month.", name: "Pricing" },
  });
  expect(res.ok).toBe(true);
  const requestId = res.headers.get("x-request-id") ?? "";
  const { id } = (await res.json()) as { id: string };
  for (let i = 0; i < 200; i++) {
    const source = (await (await rt.call(`/api/knowledge/${id}`)).json()) as { status: string };
    if (source.status === "indexed") return { id, requestId };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${id} was never indexed`);
}

describe("observability", () => {
  it("follows a create from its API request to the index worker's lines by one correlation id", async () => {
    const { requestId } = await indexedSource();
    expect(requestId).not.toBe("");
    // The API's own request line, and the worker's line for the message it queued (written
    // just after the source is marked indexed).
    await vi.waitFor(() => {
      const mine = lines.filter((line) => line.correlation_id === requestId);
      // Each line names the function of the manifest that wrote it, though the local runtime
      // runs them all in one process.
      expect(mine).toContainEqual(
        expect.objectContaining({
          message: "request",
          method: "POST",
          requestId,
          function_name: "knowledge-api",
        }),
      );
      expect(mine).toContainEqual(
        expect.objectContaining({
          message: "message handled",
          outcome: "indexed",
          // The Lambda context the worker was invoked with.
          function_name: "index-worker",
          function_request_id: expect.any(String),
          cold_start: expect.any(Boolean),
        }),
      );
    }, WAIT);
  });

  it("writes EMF for an indexed source with the service as its only dimension", async () => {
    await indexedSource();
    const emf = await vi.waitFor(() => {
      const found = lines.filter((line) => "_aws" in line && "SourcesIndexed" in line);
      expect(found.length).toBeGreaterThan(0);
      return found;
    }, WAIT);
    for (const doc of emf) {
      expect(doc).toMatchObject({
        service: "kb-intel",
        _aws: {
          CloudWatchMetrics: [
            {
              Namespace: "kb-intel",
              Dimensions: [["service"]],
              Metrics: expect.arrayContaining([{ Name: "SourcesIndexed", Unit: "Count" }]),
            },
          ],
        },
      });
      expect(doc.SourcesIndexed).toBeGreaterThanOrEqual(1);
      expect(doc).not.toHaveProperty("workspaceId");
    }
  });

  it("reads messages with or without a correlation id, falling back to the message's own id", async () => {
    const handle = recordHandler(IndexMessage, async () => "skipped");
    const body = { kind: "index", workspaceId: "ws_1", sourceId: "kb_1", revision: 1 };
    const attributes = { ApproximateReceiveCount: "1" };
    await handle({ messageId: "sqs-1", body: JSON.stringify(body), attributes });
    await handle({
      messageId: "sqs-2",
      body: JSON.stringify({ ...body, correlationId: "req-2" }),
      attributes,
    });
    const handled = lines.filter((line) => line.message === "message handled");
    expect(handled.map((line) => line.correlation_id)).toEqual(
      expect.arrayContaining(["sqs-1", "req-2"]),
    );
  });
});
