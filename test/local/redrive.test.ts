import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRuntime, startLocal } from "../../lib/local/runtime.js";

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
    runtime.queues.send("index", "not json at all");
    await runtime.queues.idle();
    expect(runtime.queues.deadLetters("index")).toHaveLength(1);

    const result = await cli("lib/admin/redrive-cli.ts", "index");
    expect(result.stdout).toContain("redrive started");
    await runtime.queues.idle();
    // The poison message fails again and returns to the dead-letter list: nothing is lost.
    expect(runtime.queues.deadLetters("index")).toEqual([
      expect.objectContaining({ body: "not json at all" }),
    ]);
  });

  it("keys create, list and revoke work while the runtime holds the database", async () => {
    const created = await cli("lib/admin/keys-cli.ts", "create", "--name", "Acme");
    const key = /key {7}(\S+)/.exec(created.stdout)?.[1] ?? "";
    const keyId = /key id {4}(\S+)/.exec(created.stdout)?.[1] ?? "";
    expect(await runtime.keys.verify(key)).toMatch(/^ws_/);
    expect((await cli("lib/admin/keys-cli.ts", "list")).stdout).toContain("Acme");
    expect((await cli("lib/admin/keys-cli.ts", "revoke", keyId)).status).toBe(0);
    expect(await runtime.keys.verify(key)).toBeNull();
  });
});
