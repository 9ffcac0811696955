import { queueWorkers } from "../../functions/manifest.js";
import { type ConsumeOptions, recursiveLoopOf } from "../../infra/local/queues.js";

/**
 * For a test that feeds a worker's logic from a queue of its own: what the local runtime takes
 * from the worker's manifest entry besides batching, its name and its RecursiveLoop (`recursion`),
 * so the test's chains of messages are stopped, or not, as the worker's would be.
 */
export function asWorker(name: string): Pick<ConsumeOptions, "functionName" | "recursiveLoop"> {
  const worker = queueWorkers.find((w) => w.name === name);
  if (!worker) throw new Error(`No worker ${name} in the manifest`);
  return { functionName: worker.name, recursiveLoop: recursiveLoopOf(worker) };
}
