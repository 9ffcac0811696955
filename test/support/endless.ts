import type { MemoryBudget } from "../../lib/files/budget.js";
import { Sandbox, workerScript } from "../../lib/files/sandbox.js";

export { NEVER_ENDS } from "./never-ends.mjs";

/**
 * A sandbox of its own whose threads are the real ones, except that a task whose input holds
 * NEVER_ENDS never ends (endless-worker.mjs): a deadline test on it passes or fails the same on a
 * fast machine and a loaded one, and the same sandbox goes on serving other content.
 */
export function endlessSandbox(budget: MemoryBudget): Sandbox {
  const { entry } = workerScript();
  return new Sandbox(budget, { url: new URL("./endless-worker.mjs", import.meta.url), entry });
}
