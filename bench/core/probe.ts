import { spawn } from "node:child_process";

export interface ProbeRun {
  /** Everything the probe wrote to its report pipe (file descriptor 3). */
  report: string;
  /** From spawning the process to the first byte on the report pipe, measured by this process. */
  wallMs: number;
}

/**
 * Runs a probe in a fresh Node process: `args` after the Node binary, this process's environment
 * or `env` without NODE_OPTIONS (tsx's loader would be a cost no function pays). The probe answers
 * on file descriptor 3, so its own logs on stdout and stderr cannot corrupt the report; a probe
 * that outlives `timeoutMs` is killed, one that answers nothing is an error with its stderr.
 */
export async function runProbe(
  args: string[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ProbeRun> {
  const { NODE_OPTIONS: _, ...childEnv } = env;
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    env: childEnv,
    stdio: ["ignore", "ignore", "pipe", "pipe"],
  });
  let report = "";
  let errors = "";
  let answeredAt = 0;
  child.stdio[3]?.on("data", (part: Buffer) => {
    answeredAt ||= performance.now();
    report += part.toString();
  });
  child.stderr?.on("data", (part: Buffer) => {
    errors += part.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(timer);
  if (!report) throw new Error(`the probe exited with ${code} and no answer\n${errors}`);
  return { report, wallMs: answeredAt - started };
}
