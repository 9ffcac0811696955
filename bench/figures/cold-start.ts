import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { queueWorkers } from "../../functions/manifest.js";
import { NOT_INVOKED } from "../cold-start/protocol.js";
import { buildProbe, type ColdStart, coldStart } from "../cold-start/spawn.js";
import { FLOOR, type Subject, subjects } from "../cold-start/subjects.js";
import type { Figure, Row } from "../core/figure.js";
import { interleave } from "../core/measure.js";
import { summarize } from "../core/stats.js";

/** The manifest's `nodeModules`: loaded at import time, but not part of the bundle's size. */
function installedBeside(): string {
  return queueWorkers
    .flatMap((fn) => (fn.nodeModules?.length ? [`${fn.name}: ${fn.nodeModules.join(", ")}`] : []))
    .join("; ");
}

function row(subject: Subject, runs: ColdStart[]): Row {
  const failed = runs.find((r) => !r.ok);
  const invoked = runs.some((r) => r.detail !== NOT_INVOKED);
  return {
    name: subject.name,
    ...(subject.name === FLOOR ? {} : { floor: FLOOR }),
    cells: {
      event: failed
        ? `${subject.kind} → FAILED: ${failed.detail}`
        : `${subject.kind}${invoked ? ` → ${runs[0]?.detail}` : ""}`,
      size: subject.bytes / 1024,
      total: summarize(runs.map((r) => r.wallMs)),
      boot: summarize(runs.map((r) => r.bootMs)),
      load: summarize(runs.map((r) => r.loadedMs - r.bootMs)),
      first: invoked ? summarize(runs.map((r) => r.answeredMs - r.loadedMs)) : null,
    },
  };
}

export const figure: Figure = {
  number: 1,
  id: "cold-start",
  title: "Cold start of each Lambda entry point",
  description:
    "Every function of `functions/manifest.ts`, bundled by `infra/aws/bundle.ts` exactly as deployed " +
    "(minified ESM, AWS SDK inside), then loaded by a fresh `node --enable-source-maps` " +
    "process that answers one event against the emulators of this run: an API Gateway REST proxy " +
    "event for API functions, an SQS batch of one real message for workers, an EventBridge event " +
    "for schedules. Floor: a minimal Hono `GET /hello` Lambda bundled the same way; its peer adds " +
    "the service's store clients (`createStores`), to tell the AWS SDK's share from the " +
    "functions' own code, and the first API function that uses the stores has a peer built with " +
    "the AWS SDK left to the runtime instead of bundled. Runs alternate " +
    "between the functions, so load from neighbours falls on all of them alike.",
  async run(ctx) {
    const dir = join(ctx.outDir, "bundles");
    const eventsDir = join(ctx.outDir, "events");
    await mkdir(eventsDir, { recursive: true });
    const [list, probe] = await Promise.all([subjects(ctx, dir), buildProbe(ctx.outDir)]);
    const env = { ...process.env, POWERTOOLS_LOG_LEVEL: "INFO" };
    const rounds = ctx.quick ? 3 : 12;
    ctx.log(`cold starts: ${list.length} bundles × ${rounds} fresh processes`);
    const runs = await interleave(
      rounds,
      Object.fromEntries(
        list.map((subject) => [
          subject.name,
          async () =>
            coldStart({
              probe,
              bundle: subject.bundle,
              name: subject.name,
              event: await subject.event(),
              env: { ...env, AWS_LAMBDA_FUNCTION_NAME: subject.name },
              eventFile: join(eventsDir, `${subject.name.replace(/\W+/g, "-")}.json`),
            }),
        ]),
      ),
    );
    return {
      tables: [
        {
          caption: "Fresh process to first answer",
          compare: "total",
          columns: [
            { key: "event", label: "event" },
            { key: "size", label: "bundle", unit: "KB" },
            { key: "total", label: "spawn → answer", unit: "ms" },
            { key: "boot", label: "Node boot", unit: "ms" },
            { key: "load", label: "import bundle", unit: "ms" },
            { key: "first", label: "first event", unit: "ms" },
          ],
          rows: list.map((subject) => row(subject, runs[subject.name] ?? [])),
        },
      ],
      notes: [
        "Bundle sizes are of the minified `index.mjs` alone, the AWS SDK included (the peer that " +
          "leaves it to the runtime resolves it from the repository's `node_modules`, as are the " +
          `packages installed beside a bundle: ${installedBeside() || "none"}).`,
        "The emulators answer over loopback, so `first event` holds the function's own work and " +
          "the SDK's first-call setup, not AWS's network latency.",
      ],
    };
  },
};
