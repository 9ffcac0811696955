import { startTestRuntime } from "../support/runtime.js";
import { seedOneOfEach } from "./fixtures.js";
import type { ProcessReady } from "./runtime.js";
import { runtimeStores } from "./store.js";

/**
 * The entry of `startHardenedProcess`: the local runtime, in memory, with one resource of every
 * kind, on the environment the parent gives. Tells the parent where it serves over IPC, stops on
 * SIGTERM, and ends when the parent goes away.
 */

const rt = await startTestRuntime();
// Nothing here waits for idle queues, so routes on a webhook id get one to aim at.
const ids = await seedOneOfEach(rt, runtimeStores().table, rt.runtime.workspaceId, rt.key, {
  webhook: true,
});
const ready: ProcessReady = { url: rt.url, key: rt.key, otherKey: rt.otherKey, ids };
process.send?.(ready);

const stop = () => {
  rt.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once("SIGTERM", stop);
process.once("disconnect", stop);
