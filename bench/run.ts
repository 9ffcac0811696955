import { mkdir, readdir, readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createContext } from "./core/context.js";
import type { Figure } from "./core/figure.js";
import {
  type FigureReport,
  machine,
  merge,
  type Report,
  rate,
  writeReport,
} from "./core/report.js";

/**
 * Runs every figure in `bench/figures/` in issue order and writes `bench/report.md` and
 * `bench/report.json`. `--quick` (small sizes) and `--only=id,id` write to `bench/out/` (or
 * `BENCH_OUT_DIR`) instead, so a partial run never replaces the full report; `--only=id,id
 * --merge` puts its figures in the full report in place of theirs, marked as measured again.
 * Started by `main.ts`, which sets the environment first.
 */

const BENCH_DIR = import.meta.dirname;
const OUT_DIR = process.env.BENCH_OUT_DIR ?? join(BENCH_DIR, "out");

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    merge: { type: "boolean", default: false },
  },
});
const only = args.only?.split(",").map((id) => id.trim());

function isFigure(value: unknown): value is Figure {
  return typeof value === "object" && value !== null && "run" in value && "number" in value;
}

/** Every module of `figures/` exporting `figure`: adding a figure is adding a file. */
async function discoverFigures(): Promise<Figure[]> {
  const dir = join(BENCH_DIR, "figures");
  const figures: Figure[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".ts"))) {
    const module = (await import(pathToFileURL(join(dir, file)).href)) as { figure?: unknown };
    if (!isFigure(module.figure)) throw new Error(`bench/figures/${file} exports no \`figure\``);
    figures.push(module.figure);
  }
  return figures.sort((a, b) => a.number - b.number);
}

const started = performance.now();
const log = (message: string) =>
  process.stderr.write(
    `[bench ${((performance.now() - started) / 1000).toFixed(0)}s] ${message}\n`,
  );

const figures = (await discoverFigures()).filter((f) => !only || only.includes(f.id));
if (figures.length === 0) throw new Error(`No figure matches --only=${args.only}`);
await mkdir(OUT_DIR, { recursive: true });
const ctx = createContext({ quick: args.quick, outDir: OUT_DIR, log });
const loadAtStart = loadavg()[0] ?? 0;
const reports: FigureReport[] = [];
try {
  for (const { run, ...figure } of figures) {
    log(`${figure.number}. ${figure.title}`);
    const figureStarted = performance.now();
    const seconds = () => (performance.now() - figureStarted) / 1000;
    try {
      const output = await run(ctx);
      reports.push({
        ...figure,
        tables: output.tables.map(rate),
        notes: output.notes ?? [],
        seconds: seconds(),
      });
    } catch (err) {
      log(`${figure.id} failed: ${err instanceof Error ? err.stack : String(err)}`);
      reports.push({ ...figure, tables: [], notes: [], seconds: seconds(), error: String(err) });
    }
  }
} finally {
  await ctx.close();
}

const report: Report = {
  startedAt: new Date(Date.now() - (performance.now() - started)).toISOString(),
  seconds: (performance.now() - started) / 1000,
  quick: args.quick,
  machine: machine(loadAtStart),
  figures: reports,
};
let files: string[];
if (args.merge && only && !args.quick) {
  // The figures run replace theirs in the full report; the others stay as they were measured.
  const full = JSON.parse(await readFile(join(BENCH_DIR, "report.json"), "utf8")) as Report;
  files = await writeReport(merge(full, report), BENCH_DIR);
} else files = await writeReport(report, args.quick || only ? OUT_DIR : BENCH_DIR);
log(`wrote ${files.join(", ")}`);
// Keep-alive sockets of the SDK clients would hold the process open.
process.exit(reports.some((r) => r.error) ? 1 : 0);
