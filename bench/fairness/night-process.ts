import { type SimulationOptions, simulate } from "./simulation.js";

/**
 * One night of the fairness simulation in a process of its own (`apart.ts`): its options come
 * with the first message, its progress lines and its result go back the same way, the result's
 * map of waits as entries.
 */
process.once("message", async (options: Omit<SimulationOptions, "log">) => {
  try {
    const result = await simulate({
      ...options,
      log: (message) => process.send?.({ log: message }),
    });
    process.send?.({ result: { ...result, waits: [...result.waits] } });
  } catch (err) {
    process.send?.({ error: (err as Error).stack ?? String(err) });
  }
});
