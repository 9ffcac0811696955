import { parentPort } from "node:worker_threads";
import { ParseError } from "./errors.js";
import { type ParseJob, type ParseReply, runParser } from "./parsers.js";

/**
 * A parser thread (see sandbox.ts): parses each ParseJob it is sent, one at a time, and posts a
 * ParseReply. Any other error escapes as the thread's `error` event: a bug or an outage, not a
 * bad file, and the thread is discarded.
 */
async function reply(job: ParseJob): Promise<ParseReply> {
  try {
    return { ok: true, text: await runParser(job) };
  } catch (err) {
    if (err instanceof ParseError) return { ok: false, code: err.code, message: err.message };
    throw err;
  }
}

parentPort?.on("message", (job: ParseJob) => {
  reply(job).then(
    (answer) => parentPort?.postMessage(answer),
    (err: unknown) => {
      // Rethrown outside the promise chain, so it ends the thread as an uncaught error.
      setImmediate(() => {
        throw err;
      });
    },
  );
});
