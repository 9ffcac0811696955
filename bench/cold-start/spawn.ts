import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import type { ProbeResult } from "./protocol.js";

/** The Node options every function runs with on AWS (`infra/aws/constructs/service-function.ts`). */
const LAMBDA_NODE_OPTIONS = ["--enable-source-maps"];
const PROBE_TIMEOUT_MS = 60_000;

export interface ColdStart extends ProbeResult {
  /** From spawning the process to the answer, measured by this process. */
  wallMs: number;
}

/** Compiles the probe to plain JavaScript, so the fresh process pays for no TypeScript loader. */
export async function buildProbe(outDir: string): Promise<string> {
  const outfile = join(outDir, "probe.mjs");
  await build({
    entryPoints: [join(import.meta.dirname, "probe.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
  });
  return outfile;
}

/**
 * Starts a fresh Node process that imports `bundle` and answers `event` once. The environment is
 * the function's configuration; NODE_OPTIONS from this process (tsx's loader) is not passed on.
 */
export async function coldStart(options: {
  probe: string;
  bundle: string;
  name: string;
  event: unknown;
  env: NodeJS.ProcessEnv;
  eventFile: string;
}): Promise<ColdStart> {
  // No event: the probe only loads the bundle.
  const eventFile = options.event === undefined ? "" : options.eventFile;
  if (eventFile) await writeFile(eventFile, JSON.stringify(options.event));
  const { NODE_OPTIONS: _, ...env } = options.env;
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...LAMBDA_NODE_OPTIONS, options.probe, options.bundle, eventFile, options.name],
    { env, stdio: ["ignore", "ignore", "pipe", "pipe"] },
  );
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
  const timer = setTimeout(() => child.kill("SIGKILL"), PROBE_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(timer);
  if (!report) {
    throw new Error(`${options.name}: the probe exited with ${code} and no answer\n${errors}`);
  }
  return { ...(JSON.parse(report) as ProbeResult), wallMs: answeredAt - started };
}
