import { join } from "node:path";
import { build } from "esbuild";
import { runProbe } from "../core/probe.js";
import { FIRST_ANSWERED, type ProbeAnswer, type ProbeTask } from "./protocol.js";

const PROBE_TIMEOUT_MS = 180_000;

export interface ColdSearch extends ProbeAnswer {
  /** From spawning the process to its answer, measured by this process. */
  wallMs: number;
}

/**
 * Compiles the probe to plain JavaScript, as a function is bundled: the engine's native package,
 * Apache Arrow and the AWS SDK stay outside and load from node_modules. Split at its dynamic
 * imports, so what the probe imports late (and times) is not loaded with it at boot.
 */
export async function buildSearchProbe(outDir: string): Promise<string> {
  const dir = join(outDir, "search-probe");
  await build({
    entryPoints: { probe: join(import.meta.dirname, "probe.ts") },
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    splitting: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: ["@lancedb/lancedb", "apache-arrow", "@aws-sdk/*"],
    logLevel: "warning",
  });
  return join(dir, "probe.mjs");
}

/**
 * Starts a fresh Node process that searches as `task` says and answers what it measured, with this
 * process's environment or `env` (LanceDB takes its S3 endpoint from `AWS_ENDPOINT_URL_S3`).
 */
export async function coldSearch(
  probe: string,
  task: ProbeTask,
  env?: NodeJS.ProcessEnv,
): Promise<ColdSearch> {
  const { report, wallMs } = await runProbe([probe, JSON.stringify(task)], PROBE_TIMEOUT_MS, env);
  // The probe writes one byte as soon as its first search has answered, its report at the end.
  return { ...(JSON.parse(report.slice(FIRST_ANSWERED.length)) as ProbeAnswer), wallMs };
}
