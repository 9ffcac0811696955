/**
 * `npm run mutate [module...]`: mutation testing of the modules where a wrong line is a security or
 * money bug. stryker.config.mjs lists each module with the tests that must notice a change to it;
 * Stryker runs once per module, one module at a time, so a mutant that needs every test rerun
 * (one only reached from a `beforeAll`) reruns that module's tests, not all of them. Writes
 * bench/mutation.md (score per file, every surviving mutant) from the JSON reports in
 * bench/mutation/, beside the HTML ones, and fails when a file scores under 80%.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { z } from "zod";

const MIN_SCORE = 80;
const REPORTS = "bench/mutation";
const SUMMARY = "bench/mutation.md";

const Config = z.object({
  modules: z.record(
    z.string(),
    z.object({ mutate: z.array(z.string()), testFiles: z.array(z.string()) }),
  ),
});

/** The part of Stryker's JSON report (mutation-testing-report-schema) read here. */
const Report = z.object({
  files: z.record(
    z.string(),
    z.object({
      mutants: z.array(
        z.object({
          mutatorName: z.string(),
          replacement: z.string().optional(),
          status: z.string(),
          location: z.object({ start: z.object({ line: z.number(), column: z.number() }) }),
        }),
      ),
    }),
  ),
});
type Mutant = z.infer<typeof Report>["files"][string]["mutants"][number];

const STATUSES = ["Killed", "Timeout", "Survived", "NoCoverage", "Ignored"] as const;

interface FileScore {
  module: string;
  file: string;
  counts: Record<(typeof STATUSES)[number], number>;
  /** Detected (killed or timed out) over every mutant that ran or could have; null when none. */
  score: number | null;
  survivors: Mutant[];
}

function scoreFile(module: string, file: string, mutants: Mutant[]): FileScore {
  const counts = Object.fromEntries(
    STATUSES.map((status) => [status, mutants.filter((m) => m.status === status).length]),
  ) as FileScore["counts"];
  const detected = counts.Killed + counts.Timeout;
  const valid = detected + counts.Survived + counts.NoCoverage;
  return {
    module,
    file,
    counts,
    score: valid === 0 ? null : (100 * detected) / valid,
    survivors: mutants.filter((m) => m.status === "Survived" || m.status === "NoCoverage"),
  };
}

const oneLine = (code: string) => {
  const flat = code.replace(/\s+/g, " ").trim();
  return flat.length > 90 ? `${flat.slice(0, 87)}...` : flat;
};

function summary(scores: FileScore[], runs: Map<string, string>): string {
  const percent = (score: number | null) => (score === null ? "n/a" : `${score.toFixed(1)}%`);
  const rows = scores.map(
    (s) =>
      `| ${s.module} | \`${s.file}\` | ${STATUSES.map((status) => s.counts[status]).join(" | ")} | ${percent(s.score)} |`,
  );
  const survivors = scores
    .filter((s) => s.survivors.length > 0)
    .map((s) =>
      [
        `### \`${s.file}\``,
        "",
        ...s.survivors.map(
          (m) =>
            `- line ${m.location.start.line}, ${m.mutatorName}${m.status === "NoCoverage" ? " (no test reaches it)" : ""}: \`${oneLine(m.replacement ?? "")}\``,
        ),
        "",
      ].join("\n"),
    );
  return [
    "# Mutation testing",
    "",
    'Written by `npm run mutate` (see docs/testing.md, "Mutation testing"; modules and their tests in',
    "`stryker.config.mjs`). Score: mutants detected (killed, or timed out) over those that ran or",
    `found no test; ignored ones carry a \`Stryker disable\` comment saying why. Every file must score ${MIN_SCORE}% or more.`,
    "",
    `Runs: ${[...runs].map(([module, at]) => `${module} ${at}`).join(", ")}.`,
    "",
    "| Module | File | Killed | Timeout | Survived | No coverage | Ignored | Score |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
    "",
    "## Surviving mutants",
    "",
    ...(survivors.length > 0 ? survivors : ["None.", ""]),
  ].join("\n");
}

const { modules } = Config.parse(
  await import(new URL("../stryker.config.mjs", import.meta.url).href),
);
const names = Object.keys(modules);
const chosen = process.argv.slice(2);
for (const name of chosen) {
  if (!names.includes(name))
    throw new Error(`Unknown module ${name}; modules: ${names.join(", ")}`);
}

for (const name of chosen.length > 0 ? chosen : names) {
  console.log(`\n== mutating ${name}: ${modules[name]?.mutate.join(", ")}\n`);
  const run = spawnSync("node_modules/.bin/stryker", ["run", "stryker.config.mjs"], {
    stdio: "inherit",
    env: { ...process.env, MUTATE_MODULE: name },
  });
  if (run.status !== 0) {
    console.error(`Stryker failed on ${name} (exit ${run.status ?? run.signal})`);
    process.exit(1);
  }
}

// Every module with a report, so a partial rerun keeps the summary whole.
const scores: FileScore[] = [];
const runs = new Map<string, string>();
for (const name of names) {
  const path = `${REPORTS}/${name}.json`;
  if (!existsSync(path)) continue;
  runs.set(name, statSync(path).mtime.toISOString().slice(0, 16).replace("T", " "));
  const report = Report.parse(JSON.parse(readFileSync(path, "utf8")));
  for (const [file, { mutants }] of Object.entries(report.files)) {
    scores.push(scoreFile(name, file, mutants));
  }
}
writeFileSync(SUMMARY, summary(scores, runs));
console.log(`\nWrote ${SUMMARY}`);

const low = scores.filter((s) => s.score !== null && s.score < MIN_SCORE);
for (const s of low) console.error(`${s.file} scores ${s.score?.toFixed(1)}%, under ${MIN_SCORE}%`);
process.exit(low.length > 0 ? 1 : 0);
