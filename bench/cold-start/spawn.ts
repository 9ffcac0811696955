import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { build } from "esbuild";
import { runProbe } from "../core/probe.js";
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
  const { report, wallMs } = await runProbe(
    [...LAMBDA_NODE_OPTIONS, options.probe, options.bundle, eventFile, options.name],
    PROBE_TIMEOUT_MS,
    options.env,
  ).catch((error: Error) => {
    throw new Error(`${options.name}: ${error.message}`);
  });
  return { ...(JSON.parse(report) as ProbeResult), wallMs };
}
