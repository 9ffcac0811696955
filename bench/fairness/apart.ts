import { fork } from "node:child_process";
import { join } from "node:path";
import type { SimulationOptions, SimulationResult, TenantWaits } from "./simulation.js";

type Answer =
  | { log: string }
  | { error: string }
  | { result: Omit<SimulationResult, "waits"> & { waits: Array<[string, TenantWaits]> } };

/**
 * Runs a night in a child process (`night-process.ts`), so that the calm and the hostile night
 * of the figure run at once, one a core: each is a single event loop busy with its emulators'
 * requests, and its virtual clock makes what it reports independent of how busy the machine is.
 * A larger young generation keeps the collector's share of the night's many small objects down.
 */
export function simulateApart(options: SimulationOptions): Promise<SimulationResult> {
  const { log, ...rest } = options;
  const child = fork(join(import.meta.dirname, "night-process.ts"), [], {
    execArgv: ["--import", "tsx", "--max-semi-space-size=64"],
    // The endpoint that never answers fails every attempt by design: a warning each, hundreds a
    // night, which would bury the bench's progress lines.
    env: { ...process.env, POWERTOOLS_LOG_LEVEL: "ERROR" },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise<SimulationResult>((resolve, reject) => {
    child.on("message", (answer: Answer) => {
      if ("log" in answer) log?.(answer.log);
      else if ("error" in answer) reject(new Error(answer.error));
      else resolve({ ...answer.result, waits: new Map(answer.result.waits) });
    });
    child.on("exit", (code) => reject(new Error(`the night's process exited with ${code}`)));
    child.send(rest);
  }).finally(() => child.kill());
}
