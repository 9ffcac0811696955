import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRuntime, startLocal } from "../../../infra/local/runtime.js";
import { MAX_RECEIVE_COUNT } from "../../../lib/config.js";

let dataDir: string;
let runtime: LocalRuntime;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "kb-redrive-"));
  runtime = await startLocal({ port: 0, host: "127.0.0.1", dataDir, retryDelayMs: 5 });
});
afterAll(() => runtime.close());

/** Runs a CLI without blocking this process, which hosts the runtime it talks to. */
const cli = (script: string, ...args: string[]) =>
  new Promise<{ stdout: string; status: number }>((resolve) => {
    execFile(
      "node_modules/.bin/tsx",
      [script, ...args],
      { env: { ...process.env, DATA_DIR: dataDir }, encoding: "utf8" },
      (error, stdout) => resolve({ stdout, status: error ? Number(error.code ?? 1) : 0 }),
    );
  });

describe("the admin commands against a running local runtime", () => {
  it("redrive moves dead letters back to their queue, where they are delivered again", async () => {
    // A queue of this test's own, whose worker fails until the test repairs it.
    const received: string[] = [];
    let repaired = false;
    runtime.queues.create("probe");
    runtime.queues.consume("probe", async ({ Records }) => {
      received.push(...Records.map((r) => `${r.body} ${r.attributes.ApproximateReceiveCount}`));
      const failures = repaired ? [] : Records.map((r) => ({ itemIdentifier: r.messageId }));
      return { batchItemFailures: failures };
    });
    runtime.queues.send("probe", "job");
    await runtime.queues.idle();
    expect(runtime.queues.deadLetters("probe")).toEqual([
      expect.objectContaining({ body: "job", receiveCount: MAX_RECEIVE_COUNT }),
    ]);

    repaired = true;
    const result = await cli("infra/admin/redrive-cli.ts", "probe");
    expect(result.stdout).toContain("redrive started");
    await runtime.queues.idle();
    expect(runtime.queues.deadLetters("probe")).toEqual([]);
    expect(received).toHaveLength(MAX_RECEIVE_COUNT + 1);
    // Back in its queue, the message starts its receives afresh.
    expect(received.at(-1)).toBe("job 1");
  });

  it("keys create, list and revoke work while the runtime holds the database", async () => {
    const created = await cli("infra/admin/keys-cli.ts", "create", "--name", "Acme");
    const key = /key {7}(\S+)/.exec(created.stdout)?.[1] ?? "";
    const keyId = /key id {4}(\S+)/.exec(created.stdout)?.[1] ?? "";
    expect(await runtime.keys.verify(key)).toMatch(/^ws_/);
    expect((await cli("infra/admin/keys-cli.ts", "list")).stdout).toContain("Acme");
    expect((await cli("infra/admin/keys-cli.ts", "revoke", keyId)).status).toBe(0);
    expect(await runtime.keys.verify(key)).toBeNull();
  });
});
