// A sandbox thread (lib/files/sandbox.ts) that is the real one (dev-worker.mjs and the entry it is
// given), except that a task whose input holds NEVER_ENDS never ends: the thread loops, like a
// parser caught in a cycle, until the sandbox terminates it. A deadline test built on it does not
// depend on how fast the machine reads the content: no machine finishes it.
import { parentPort } from "node:worker_threads";
import { NEVER_ENDS } from "./never-ends.mjs";

/** Whether a field of a task's input (text, or bytes moved into the thread) holds the marker. */
const marked = (value) =>
  typeof value === "string"
    ? value.includes(NEVER_ENDS)
    : value instanceof Uint8Array &&
      Buffer.from(value.buffer, value.byteOffset, value.byteLength).includes(NEVER_ENDS);

// Listens before the real thread does: a marked request never returns to reach its listener.
parentPort?.on("message", (request) => {
  if (!Object.values(request.input).some(marked)) return;
  for (;;) {
    // Never ends.
  }
});

await import("../../lib/files/dev-worker.mjs");
