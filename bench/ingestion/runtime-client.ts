import { type ChildProcess, spawn } from "node:child_process";
import type { Dirent } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { runProbe } from "../core/probe.js";
import type { FloorAnswer, FloorTask, RuntimeReady, RuntimeTask } from "./protocol.js";

const RUNTIME_START_MS = 60_000;
/** A floor of a million chunks chunks a gigabyte of text and builds its index: hours at most. */
const FLOOR_TIMEOUT_MS = 4 * 3600_000;

/** This process's environment for a child that loads tsx itself (not through NODE_OPTIONS). */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _, ...env } = { ...process.env, ...extra };
  return env;
}

export interface RuntimeProcess {
  ready: RuntimeReady;
  pid: number;
  stop(): Promise<void>;
}

/** Starts `runtime-process.ts` on `dataDir`; resolves once it listens. */
export async function startRuntimeProcess(task: RuntimeTask): Promise<RuntimeProcess> {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "runtime-process.ts"), JSON.stringify(task)],
    { env: childEnv(), stdio: ["ignore", "ignore", "pipe", "pipe"] },
  );
  let errors = "";
  child.stderr?.on("data", (part: Buffer) => {
    // The last lines are the ones that say why it stopped.
    errors = (errors + part.toString()).slice(-20_000);
  });
  const ready = await new Promise<RuntimeReady>((resolve, reject) => {
    let answer = "";
    const timer = setTimeout(() => reject(new Error(`no answer:\n${errors}`)), RUNTIME_START_MS);
    child.stdio[3]?.on("data", (part: Buffer) => {
      answer += part.toString();
      if (answer.endsWith("\n")) {
        clearTimeout(timer);
        resolve(JSON.parse(answer) as RuntimeReady);
      }
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code}:\n${errors}`)));
  });
  child.on("exit", (code, signal) => {
    if (code !== 0 && signal !== "SIGTERM")
      process.stderr.write(`runtime exited ${code}\n${errors}`);
  });
  return {
    ready,
    pid: child.pid ?? 0,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Runs the floor in a fresh process with `env` (the engine's S3 endpoint). */
export async function runFloor(task: FloorTask, env: NodeJS.ProcessEnv): Promise<FloorAnswer> {
  const { report } = await runProbe(
    ["--import", "tsx", join(import.meta.dirname, "floor.ts"), JSON.stringify(task)],
    FLOOR_TIMEOUT_MS,
    childEnv(env),
  );
  return JSON.parse(report) as FloorAnswer;
}

/**
 * The bytes of the objects s3rver keeps under `dir` (a bucket's folder, or a prefix of it): each
 * object is a file named `<name>._S3rver_object` beside its metadata. Read from the disk rather
 * than listed through the proxy, so sampling adds no S3 request to the count.
 */
export async function objectFileBytes(dir: string): Promise<number> {
  let total = 0;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith("._S3rver_object")) continue;
    // Removed between the listing and now: its bytes are gone.
    total += await stat(join(entry.parentPath, entry.name)).then(
      (s) => s.size,
      () => 0,
    );
  }
  return total;
}
