import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { ParseError } from "./errors.js";
import type { ParseJob, ParseReply } from "./parsers.js";

/**
 * Parsing runs in worker threads with a V8 heap limit and a deadline after which the thread is
 * terminated: a PDF that loops forever or a document that eats memory fails its own source, and
 * the calling process (the SQS worker, with other records in flight) goes on.
 *
 * A thread parses one file at a time. After a clean answer it waits, unreferenced, for the next
 * file (at most MAX_IDLE wait), so a warm process does not pay thread start-up (module loading)
 * for every file; after a timeout, running out of memory or a crash it is discarded.
 *
 * Which script a thread runs depends on how this module itself was loaded:
 * - from TypeScript sources (tsx, vitest): `parse-worker.ts` through `dev-worker.mjs`, which
 *   registers tsx inside the thread (Node 20 does not hand loader hooks to worker threads);
 * - bundled (esbuild, Lambda): `parse-worker.mjs` (or `.js`) beside the bundle, built from
 *   `lib/files/parse-worker.ts` as a second entry point.
 * `workerUrl` overrides both.
 */
export function workerScript(base = import.meta.url): { url: URL; entry?: string } {
  const extension = extname(fileURLToPath(base));
  if (extension === ".ts") {
    return {
      url: new URL("./dev-worker.mjs", base),
      entry: new URL("./parse-worker.ts", base).href,
    };
  }
  return { url: new URL(`./parse-worker${extension}`, base) };
}

const MAX_IDLE = 2;
const OUT_OF_MEMORY = "ERR_WORKER_OUT_OF_MEMORY";

interface Thread {
  worker: Worker;
  /** Threads are only reused for jobs with the same script and heap limit. */
  fits: string;
}

const idle: Thread[] = [];

function threadFor(script: { url: URL; entry?: string | undefined }, maxHeapMb: number): Thread {
  const fits = `${script.url.href} ${maxHeapMb}`;
  const index = idle.findIndex((thread) => thread.fits === fits);
  if (index >= 0) return idle.splice(index, 1)[0] as Thread;
  const worker = new Worker(script.url, {
    workerData: { entry: script.entry },
    resourceLimits: { maxOldGenerationSizeMb: maxHeapMb },
  });
  const thread = { worker, fits };
  // An idle thread that fails or ends is simply dropped; unhandled, its error would end the process.
  const drop = () => {
    const at = idle.indexOf(thread);
    if (at >= 0) idle.splice(at, 1);
  };
  worker.on("error", drop).on("exit", drop);
  return thread;
}

function release(thread: Thread) {
  if (idle.length < MAX_IDLE) {
    thread.worker.unref();
    idle.push(thread);
  } else {
    void thread.worker.terminate();
  }
}

/** Parses one file in a parser thread; rejects with a ParseError for a file that cannot be parsed. */
export function parseInWorker(job: ParseJob, workerUrl?: URL): Promise<string> {
  const { timeoutMs, maxHeapMb } = job.limits;
  const thread = threadFor(workerUrl ? { url: workerUrl } : workerScript(), maxHeapMb);
  const { worker } = thread;
  worker.ref();
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      worker.off("message", onMessage).off("error", onError).off("exit", onExit);
    };
    const fail = (err: Error) => {
      settle();
      void worker.terminate();
      reject(err);
    };
    const onMessage = (reply: ParseReply) => {
      settle();
      release(thread);
      if (reply.ok) resolve(reply.text);
      else reject(new ParseError(reply.code, reply.message));
    };
    const onError = (err: Error & { code?: string }) =>
      fail(
        err.code === OUT_OF_MEMORY
          ? new ParseError("too_large", `Parsing needed more than ${maxHeapMb} MB of memory`)
          : err,
      );
    const onExit = (code: number) =>
      fail(new Error(`The parser thread exited (code ${code}) without an answer`));
    const timer = setTimeout(
      () => fail(new ParseError("timeout", `Parsing took longer than ${timeoutMs / 1000} seconds`)),
      timeoutMs,
    );
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    worker.postMessage(job);
  });
}
