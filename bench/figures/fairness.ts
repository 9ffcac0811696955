import { CHECK_CAPACITY } from "../../lib/competitors/capacity.js";
import type { Figure, Row } from "../core/figure.js";
import { quantile, summarize } from "../core/stats.js";
import { type SimulationResult, simulate } from "../fairness/simulation.js";

/** Sizes of the run: 1,000 × 20 by default, smaller by environment on a busy machine. */
const size = (name: string, full: number, quick: number, isQuick: boolean) =>
  Number(process.env[name]) || (isQuick ? quick : full);

const p95 = (samples: number[]) =>
  quantile(
    [...samples].sort((a, b) => a - b),
    0.95,
  );

/**
 * A tenant's p95 is compared with its own in the run without hostile tenants, each no finer than
 * `RESOLUTION_SECONDS` of the service: below that the run's own scheduling noise (the emulators'
 * latency, multiplied by the scale) decides, not a neighbour.
 */
const RESOLUTION_SECONDS = 30;

function rows(name: string, run: SimulationResult, floor?: string): Row[] {
  const quiet = [...run.waits].filter(([t]) => t !== run.hanging && t !== run.importer);
  const checks = quiet.map(([, w]) => p95(w.checks)).filter(Number.isFinite);
  const index = quiet.map(([, w]) => p95(w.index)).filter(Number.isFinite);
  return [
    {
      name: `${name}: other tenants' check p95 (s)`,
      ...(floor ? { floor: `${floor}: other tenants' check p95 (s)` } : {}),
      cells: { wait: summarize(checks), sweep: run.sweepSeconds / 3600 },
    },
    {
      name: `${name}: other tenants' indexing p95 (s)`,
      ...(floor ? { floor: `${floor}: other tenants' indexing p95 (s)` } : {}),
      cells: { wait: summarize(index), sweep: null },
    },
  ];
}

export const figure: Figure = {
  number: 26,
  id: "fairness",
  title: "Tenants that cannot hurt each other: a simulated night",
  description:
    "`bench/fairness/simulation.ts`: every tenant's competitors swept once (`sweepAll`, the " +
    "capacity model's spread, rounds past SQS's 900 s delay) and each tenant indexing a source " +
    "meanwhile, through the local SQS endpoint as fair queues, the workers' DynamoDB slots " +
    "(`runQueuedCheck`, `inFairShare`) and the manifest's batch sizes and concurrency; each check " +
    "or indexing is one request to a fixture site on 127.0.0.1 answering after a log-normal " +
    "latency (checks p50 15 s, indexing 5 s, p95 3×), time scaled (`BENCH_FAIRNESS_SCALE`). " +
    "Hostile tenants: one whose sites hang (its sweep and a check-all of all its competitors), " +
    "one importing 1,000 sources at once (the caption gives the sizes run). Floor: the same night without them. Each row is the " +
    "spread over the other tenants of their own p95 wait (due to started), in seconds of the " +
    "service.",
  async run(ctx) {
    const tenants = size("BENCH_FAIRNESS_TENANTS", 1_000, 20, ctx.quick);
    const competitors = size("BENCH_FAIRNESS_COMPETITORS", 20, 5, ctx.quick);
    const scale = size("BENCH_FAIRNESS_SCALE", 25, 100, ctx.quick);
    const importSources = size("BENCH_FAIRNESS_IMPORT", 1_000, 100, ctx.quick);
    const options = { tenants, competitors, scale, importSources, log: ctx.log };
    const calm = await simulate({ ...options, hostile: false });
    ctx.log(`calm night: ${calm.wallSeconds.toFixed(0)} s`);
    const hostile = await simulate({ ...options, hostile: true });
    ctx.log(`hostile night: ${hostile.wallSeconds.toFixed(0)} s`);

    // Each other tenant's p95 against its own on the calm night.
    const ratios = { checks: [] as number[], index: [] as number[] };
    for (const [tenant, w] of hostile.waits) {
      if (tenant === hostile.hanging || tenant === hostile.importer) continue;
      const before = calm.waits.get(tenant);
      if (!before) continue;
      for (const kind of ["checks", "index"] as const) {
        const then = Math.max(RESOLUTION_SECONDS, p95(before[kind]));
        const now = Math.max(RESOLUTION_SECONDS, p95(w[kind]));
        if (Number.isFinite(then) && Number.isFinite(now)) ratios[kind].push(now / then);
      }
    }
    const hanging = hostile.waits.get(hostile.hanging);
    const importer = hostile.waits.get(hostile.importer);
    const worst = Math.max(...ratios.checks, ...ratios.index);
    return {
      tables: [
        {
          caption: `${tenants} tenants × ${competitors} competitors, an import of ${importSources} sources, time × ${scale}`,
          columns: [
            { key: "wait", label: "p95 wait, over tenants", unit: "s" },
            { key: "sweep", label: "sweep done after", unit: "h", digits: 2 },
          ],
          compare: "wait",
          rows: [...rows("calm", calm), ...rows("hostile", hostile, "calm")],
        },
      ],
      notes: [
        `Sweep: ${hostile.checks} checks done ${(hostile.sweepSeconds / 3600).toFixed(2)} h after it started with hostile tenants (${(calm.sweepSeconds / 3600).toFixed(2)} h without; the model's ${CHECK_CAPACITY.slots} slots spread it over ${CHECK_CAPACITY.spreadSeconds} s), ${hostile.givenUp} given up, ${hostile.deferred} put back for their workspace's slots; the sweep took ${hostile.enqueueSeconds.toFixed(0)} s of the service to queue them.`,
        `Hostile tenants: the one whose sites hang waited p95 ${p95(hanging?.checks ?? []).toFixed(0)} s for its checks and ran at most ${hanging?.mostChecks} at once (its share: ${CHECK_CAPACITY.workspaceSlots}); the importer waited p95 ${p95(importer?.index ?? []).toFixed(0)} s per source and indexed at most ${importer?.mostIndexing} at once.`,
        `Largest change of another tenant's own p95 (floor ${RESOLUTION_SECONDS} s): × ${worst.toFixed(2)}; tenants past 2×: ${ratios.checks.filter((r) => r > 2).length} for checks, ${ratios.index.filter((r) => r > 2).length} for indexing, of ${ratios.checks.length}.`,
        `Dead letters (deliveries past the worker's time limit on a machine too busy for the scale): ${calm.deadLetters} and ${hostile.deadLetters}. Wall time: ${calm.wallSeconds.toFixed(0)} s and ${hostile.wallSeconds.toFixed(0)} s. The emulators' own latency is scaled with the rest (a DynamoDB call of 10 ms on a loaded machine is ${(10 * scale) / 1000} s of the service), so waits here are an upper bound.`,
      ],
    };
  },
};
