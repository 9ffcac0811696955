import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `npm start` refusing to start (issue 17): one readable line naming the setting, no stack trace,
 * exit code 1.
 */

let dataDir: string;
let busy: Server;
let busyPort: number;

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "infra/local/main.ts"], {
    env: { ...process.env, DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: "SILENT", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stderr })));
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "kb-startup-"));
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => busy.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
});

describe("start-up errors", () => {
  it.each([
    [{ PORT: "abc" }, /^Cannot start: PORT must be a port number .*\(PORT="abc"\)$/],
    [{ PORT: "70000" }, /^Cannot start: PORT must be from 0 to 65535 \(PORT="70000"\)$/],
    [{ PORT: "0", CHUNK_SIZE: "-5" }, /^Cannot start: Invalid configuration: CHUNK_SIZE: /],
    [{ PORT: "BUSY" }, /^Cannot start: port \d+ on 127\.0\.0\.1 is in use; set PORT/],
  ])(
    "stops with one line naming the setting: %j",
    async (env, line) => {
      const port = env.PORT === "BUSY" ? String(busyPort) : env.PORT;
      const { code, stderr } = await start({ ...env, PORT: port });
      expect(code).toBe(1);
      const lines = stderr.split("\n").filter((l) => l.trim() !== "" && !l.startsWith("npm warn"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(line);
    },
    60_000,
  );
});
