import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mapLimit } from "../../lib/async.js";
import {
  type LocalProcess,
  startLocalProcess,
  stopLocalProcess,
} from "../support/local-process.js";

/**
 * The local runtime killed (SIGKILL, no chance to save anything) right after it acknowledged work,
 * then started again on the same data directory: everything it acknowledged is done after all.
 */

const API_KEY = "crash-test-key-0123456789abcdef";
const SOURCES = 100;
const env = { API_KEY, RATE_LIMIT_PER_MINUTE: "100000" };

let running: LocalProcess | undefined;
afterAll(async () => {
  if (running) await stopLocalProcess(running);
});

const call = (path: string, init: RequestInit = {}) =>
  fetch(`${running?.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
  });

/** Statuses of the workspace's sources, by id, once none is `indexing` (or after 40 s). */
async function settledStatuses(): Promise<Map<string, string>> {
  let statuses = new Map<string, string>();
  for (const deadline = Date.now() + 40_000; Date.now() < deadline; ) {
    const { sources } = (await (await call("/api/knowledge?limit=100")).json()) as {
      sources: Array<{ id: string; status: string }>;
    };
    statuses = new Map(sources.map((s) => [s.id, s.status]));
    if (![...statuses.values()].includes("indexing")) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return statuses;
}

describe("a crash right after acknowledgements", () => {
  it("loses no source: every one acknowledged before the kill is indexed after the restart", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "kb-crash-"));
    running = await startLocalProcess(dataDir, env);
    const ids = await mapLimit(
      Array.from({ length: SOURCES }, (_, i) => i),
      20,
      async (i) => {
        const res = await call("/api/knowledge", {
          method: "POST",
          body: JSON.stringify({ name: `note ${i}`, text: `Note number ${i} about pricing.` }),
        });
        expect(res.status).toBe(200);
        return ((await res.json()) as { id: string }).id;
      },
    );
    await stopLocalProcess(running, "SIGKILL");

    running = await startLocalProcess(dataDir, env);
    const statuses = await settledStatuses();
    const notIndexed = ids.filter((id) => statuses.get(id) !== "indexed");
    expect(notIndexed, `not indexed: ${notIndexed.map((id) => statuses.get(id))}`).toEqual([]);
  }, 120_000);
});
