import { readFileSync, writeSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { Context } from "aws-lambda";
import { lambdaContext } from "../../infra/local/lambda-context.js";
import { NOT_INVOKED, type ProbeResult } from "./protocol.js";

/**
 * Runs in a fresh Node process, as the Lambda runtime does on a cold start: imports one bundle,
 * hands its handler one event, and reports on file descriptor 3 (stdout carries the function's
 * own log lines). Usage: node probe.mjs <bundle.mjs> <event.json or ""> <function name>; with
 * no event file it only loads the bundle.
 */

type Handler = (event: unknown, context: Context, callback: () => void) => Promise<unknown>;

/** Whether the answer is a success for its kind of event. */
function verdict(result: unknown): Pick<ProbeResult, "ok" | "detail"> {
  if (typeof result === "object" && result !== null) {
    // A 4xx is an answer (an empty workspace has no brand profile yet); a 5xx is a failure.
    if ("statusCode" in result && typeof result.statusCode === "number") {
      return { ok: result.statusCode < 500, detail: `HTTP ${result.statusCode}` };
    }
    if ("batchItemFailures" in result && Array.isArray(result.batchItemFailures)) {
      const failed = result.batchItemFailures.length;
      return { ok: failed === 0, detail: `${failed} failed records` };
    }
  }
  return { ok: true, detail: "returned" };
}

const [bundle = "", eventFile = "", name = "function"] = process.argv.slice(2);
const event: unknown = eventFile ? JSON.parse(readFileSync(eventFile, "utf8")) : undefined;
const bootMs = performance.now();
let outcome: Pick<ProbeResult, "ok" | "detail">;
let loadedMs = bootMs;
try {
  const { handler } = (await import(pathToFileURL(bundle).href)) as { handler: Handler };
  loadedMs = performance.now();
  outcome =
    event === undefined
      ? { ok: true, detail: NOT_INVOKED }
      : verdict(await handler(event, lambdaContext(name), () => undefined));
} catch (err) {
  outcome = { ok: false, detail: err instanceof Error ? err.message : String(err) };
}
const result: ProbeResult = { bootMs, loadedMs, answeredMs: performance.now(), ...outcome };
writeSync(3, JSON.stringify(result));
// Open SDK connections would keep the process alive; the answer is all that was wanted.
process.exit(0);
