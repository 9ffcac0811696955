import { mkdir, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import type { Cell, Column, Figure, Row, Table } from "./figure.js";
import { isSummary } from "./stats.js";

export interface RatedRow extends Row {
  /** Median of the compared column over the floor row's median; null on floors. */
  ratio: number | null;
}

export interface RatedTable extends Omit<Table, "rows"> {
  rows: RatedRow[];
}

export interface FigureReport extends Omit<Figure, "run"> {
  seconds: number;
  tables: RatedTable[];
  notes: string[];
  /** Why the figure did not finish; its tables are then empty. */
  error?: string;
  /** Set on a figure merged in from a later partial run (`--merge`): when and how loaded. */
  remeasured?: { startedAt: string; loadAverage: { start: number; end: number } };
}

export interface Report {
  startedAt: string;
  seconds: number;
  quick: boolean;
  machine: {
    node: string;
    platform: string;
    cpus: number;
    cpuModel: string;
    /** 1-minute load average when the run started and ended: how busy the shared machine was. */
    loadAverage: { start: number; end: number };
  };
  figures: FigureReport[];
}

export function machine(loadAtStart: number): Report["machine"] {
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? "unknown",
    loadAverage: { start: loadAtStart, end: loadavg()[0] ?? 0 },
  };
}

/** Each row's median over its floor's median, in the table's compared column. */
export function rate(table: Table): RatedTable {
  const byName = new Map(table.rows.map((row) => [row.name, row]));
  return {
    ...table,
    rows: table.rows.map((row) => {
      const mine = row.cells[table.compare];
      const floor = row.floor ? byName.get(row.floor)?.cells[table.compare] : undefined;
      const ratio =
        isSummary(mine) && isSummary(floor) && floor.median > 0 ? mine.median / floor.median : null;
      return { ...row, ratio };
    }),
  };
}

const number = (value: number, digits: number) =>
  Number.isFinite(value)
    ? value.toLocaleString("en-US", {
        minimumFractionDigits: digits,
        maximumFractionDigits: digits,
      })
    : "–";

function cell(value: Cell | undefined, column: Column): string {
  const digits = column.digits ?? 1;
  if (value === null || value === undefined) return "–";
  if (isSummary(value)) return `${number(value.median, digits)} (${number(value.p95, digits)})`;
  if (typeof value === "number") return number(value, digits);
  return value.replaceAll("|", "\\|");
}

function ratio(table: RatedTable, row: RatedRow): string {
  if (row.ratio !== null) return `${row.ratio.toFixed(row.ratio < 10 ? 2 : 1)}×`;
  return table.rows.some((other) => other.floor === row.name) ? "floor" : "–";
}

function renderTable(table: RatedTable): string[] {
  const compared = table.columns.find((c) => c.key === table.compare);
  const labels = table.columns.map((c) => (c.unit ? `${c.label} (${c.unit})` : c.label));
  const header = ["case", ...labels, "n", `× floor (${compared?.label ?? table.compare})`];
  const lines = [
    `**${table.caption}**`,
    "",
    `| ${header.join(" | ")} |`,
    `| ${header.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
  ];
  for (const row of table.rows) {
    const compare = row.cells[table.compare];
    const cells = [
      row.name,
      ...table.columns.map((c) => cell(row.cells[c.key], c)),
      isSummary(compare) ? String(compare.n) : "–",
      ratio(table, row),
    ];
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return [...lines, ""];
}

export function renderMarkdown(report: Report): string {
  const m = report.machine;
  const lines = [
    "# Benchmark report",
    "",
    `Written by \`npm run bench\`${report.quick ? " (quick: small sizes, numbers not comparable)" : ""} on ${report.startedAt}: ` +
      `${m.cpus} × ${m.cpuModel}, Node ${m.node} (${m.platform}), 1-minute load average ` +
      `${m.loadAverage.start.toFixed(1)} at the start and ${m.loadAverage.end.toFixed(1)} at the end; ` +
      `${Math.round(report.seconds)} s in all.`,
    "",
    "Every timing is **median (p95)** over the repeated runs counted in `n`. Absolute times move " +
      "with the machine's load; the **× floor** column moves far less, because each row's floor " +
      "(the rows marked `floor`) was measured in the same run, interleaved with it: it is the " +
      "row's median over its floor's median.",
    "",
  ];
  for (const figure of report.figures) {
    lines.push(`## ${figure.number}. ${figure.title}`, "", figure.description, "");
    if (figure.remeasured) {
      const { startedAt, loadAverage } = figure.remeasured;
      lines.push(
        `_Measured again on its own (\`--only=${figure.id} --merge\`) on ${startedAt}, 1-minute ` +
          `load average ${loadAverage.start.toFixed(1)} to ${loadAverage.end.toFixed(1)}._`,
        "",
      );
    }
    if (figure.error) lines.push(`**Failed:** ${figure.error}`, "");
    for (const table of figure.tables) lines.push(...renderTable(table));
    for (const note of figure.notes) lines.push(`- ${note}`);
    lines.push(...(figure.notes.length > 0 ? [""] : []), `_${Math.round(figure.seconds)} s_`, "");
  }
  return lines.join("\n");
}

/**
 * `report` with `partial`'s figures in place of its own of the same id (or added), each marked
 * with when its run started and how loaded the machine was.
 */
export function merge(report: Report, partial: Report): Report {
  const fresh = new Map(
    partial.figures.map((figure) => [
      figure.id,
      {
        ...figure,
        remeasured: { startedAt: partial.startedAt, loadAverage: partial.machine.loadAverage },
      },
    ]),
  );
  const kept = report.figures.filter((figure) => !fresh.has(figure.id));
  return {
    ...report,
    figures: [...kept, ...fresh.values()].sort((a, b) => a.number - b.number),
  };
}

export async function writeReport(report: Report, dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const files = [join(dir, "report.md"), join(dir, "report.json")];
  await writeFile(files[0] as string, renderMarkdown(report));
  await writeFile(files[1] as string, `${JSON.stringify(report, null, 2)}\n`);
  return files;
}
