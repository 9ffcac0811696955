import { type ChildProcess, spawn } from "node:child_process";

/**
 * The local runtime as `npm start` runs it, in a child process. Node loads tsx itself (rather than
 * through the tsx command, which runs the program in a grandchild) so that a signal reaches the
 * runtime, and SIGKILL kills it.
 */
export interface LocalProcess {
  child: ChildProcess;
  url: string;
  /** Everything it printed so far, stdout and stderr. */
  output: () => string;
}

/** Starts `infra/local/main.ts` on `dataDir` with extra environment; resolves once it listens. */
export async function startLocalProcess(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<LocalProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "infra/local/main.ts"], {
    env: { ...process.env, PORT: "0", DATA_DIR: dataDir, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed:\n${output}`)), 30_000);
    const check = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => reject(new Error(`exited with ${code}:\n${output}`)));
  });
  return { child, url, output: () => output };
}

/** Stops the process with `signal` (SIGTERM: a clean stop; SIGKILL: a crash) and waits for it. */
export async function stopLocalProcess(
  running: LocalProcess,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return;
  const exited = new Promise((resolve) => running.child.once("exit", resolve));
  running.child.kill(signal);
  await exited;
}
