import { availableParallelism } from "node:os";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { MemoryBudget, processBudgetMb } from "./budget.js";
import type { SandboxReply, SandboxRequest, SandboxTasks } from "./parse-worker.js";

/**
 * Work on untrusted content (parsing a file, reading a web page: the tasks of parse-worker.ts)
 * runs in worker threads with a V8 heap limit and a deadline after which the thread is
 * terminated: a PDF that loops forever, a document or a page that eats memory fails its own
 * source, and the calling process (the SQS worker with other records in flight, or locally the
 * API beside it) goes on.
 *
 * Memory is bounded per process, not per task: each thread reserves its heap limit (plus
 * THREAD_OVERHEAD_MB) from the process's MemoryBudget before it starts and returns it when it
 * exits. The tasks are CPU-bound, so at most as many run at once as the machine has cores
 * (`maxRunning`): more would only share the cores, each in a thread of its own to start and to
 * hold in memory. A task that finds the cores busy or the budget spent waits in line for a
 * thread, at most as long as its own deadline, then fails with a plain Error: the process is
 * busy, nothing is wrong with the content, and the message is retried.
 *
 * A thread runs one task at a time. After a clean answer it goes to the first task in line if
 * that one wants the same heap limit, or waits, unreferenced, for the next (at most `maxRunning`
 * of each kind wait), so a warm process does not pay thread start-up (module loading) for every
 * file or page; after a timeout, running out of memory or a crash it is discarded.
 *
 * Which script a thread runs depends on how this module itself was loaded:
 * - from TypeScript sources (tsx, vitest): `parse-worker.ts` through `dev-worker.mjs`, which
 *   registers tsx inside the thread (Node 20 does not hand loader hooks to worker threads);
 * - bundled (esbuild, Lambda): `parse-worker.mjs` (or `.js`) beside the bundle, built from
 *   `lib/files/parse-worker.ts` as a second entry point (infra/aws/bundle.ts).
 */
export function workerScript(base = import.meta.url): WorkerScript {
  const extension = extname(fileURLToPath(base));
  if (extension === ".ts") {
    return {
      url: new URL("./dev-worker.mjs", base),
      entry: new URL("./parse-worker.ts", base).href,
    };
  }
  return { url: new URL(`./parse-worker${extension}`, base) };
}

export interface WorkerScript {
  url: URL;
  entry?: string;
}

export type TaskName = keyof SandboxTasks;
export type TaskInput<K extends TaskName> = SandboxTasks[K]["input"];
export type TaskOutput<K extends TaskName> = SandboxTasks[K]["output"];

export interface SandboxBounds {
  /** Wall-clock time of the task; also the longest wait for memory before it starts. */
  timeoutMs: number;
  /** V8 old-generation heap of the task's thread (at most what the budget leaves room for). */
  maxHeapMb: number;
}

/** The caller's errors for a task that did not answer. */
export interface Failures {
  /** The task refused its input with this code and message (a ParseError, an ExtractionError). */
  refused(code: string, message: string): Error;
  timedOut(seconds: number): Error;
  outOfMemory(heapMb: number): Error;
}

/** The young generation of a thread, pinned so that what it may use is known. */
const YOUNG_GENERATION_MB = 48;
/** Reserved per thread beyond its old-generation heap: young generation, stack, runtime. */
export const THREAD_OVERHEAD_MB = YOUNG_GENERATION_MB + 16;
/** A new thread loads its task's modules (jsdom: about a second) before its deadline starts. */
const STARTUP_MS = 60_000;
const OUT_OF_MEMORY = "ERR_WORKER_OUT_OF_MEMORY";

interface Thread {
  worker: Worker;
  /** Threads are only reused for the same task with the same heap limit. */
  fits: string;
  /** Settles when the thread has loaded its task's modules. */
  ready: Promise<unknown>;
}

/** A task waiting for a thread. */
interface Waiter {
  task: TaskName;
  heapMb: number;
  start(thread: Thread): void;
  fail(err: unknown): void;
}

const fits = (task: TaskName, heapMb: number) => `${task} ${heapMb}`;

/** The thread's next message; its error, its exit or its silence for `ms` rejects. */
function nextMessage<T>(worker: Worker, ms: number, silence: () => Error): Promise<T> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      worker.off("message", onMessage).off("error", onError).off("exit", onExit);
    };
    const onMessage = (message: T) => {
      settle();
      resolve(message);
    };
    const onError = (err: Error) => {
      settle();
      reject(err);
    };
    const onExit = (code: number) => {
      settle();
      reject(new Error(`The sandbox thread exited (code ${code}) without an answer`));
    };
    const timer = setTimeout(() => {
      settle();
      reject(silence());
    }, ms);
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
  });
}

export class Sandbox {
  private readonly idle: Thread[] = [];
  private readonly queue: Waiter[] = [];
  /** Tasks given a thread and not yet answered. */
  private running = 0;

  /**
   * `maxRunning`: tasks run at once (the machine's cores by default); also how many idle threads
   * of each kind are kept.
   */
  constructor(
    readonly budget: MemoryBudget,
    private readonly script: WorkerScript = workerScript(),
    private readonly maxRunning = availableParallelism(),
  ) {
    if (budget.capacityMb <= THREAD_OVERHEAD_MB) {
      throw new RangeError(`A sandbox needs more than ${THREAD_OVERHEAD_MB} MB`);
    }
  }

  /**
   * Runs one task in a thread; rejects with the `failures` error for content it cannot handle.
   * Buffers in `transfer` move into the thread instead of being copied (the caller's are emptied):
   * a copy outside the thread's heap that its heap limit does not bound.
   */
  async run<K extends TaskName>(
    task: K,
    input: TaskInput<K>,
    bounds: SandboxBounds,
    failures: Failures,
    transfer: ArrayBuffer[] = [],
  ): Promise<TaskOutput<K>> {
    const { timeoutMs } = bounds;
    const heapMb = this.heapFor(bounds);
    const thread = await this.thread(task, heapMb, timeoutMs);
    const { worker } = thread;
    worker.ref();
    let reply: SandboxReply;
    try {
      await thread.ready;
      const answer = nextMessage<SandboxReply>(worker, timeoutMs, () =>
        failures.timedOut(timeoutMs / 1000),
      );
      worker.postMessage({ task, input } as SandboxRequest, transfer);
      reply = await answer;
    } catch (err) {
      void worker.terminate();
      this.running--;
      this.dispatch();
      const outOfMemory = (err as { code?: unknown }).code === OUT_OF_MEMORY;
      throw outOfMemory ? failures.outOfMemory(heapMb) : err;
    }
    this.running--;
    this.dispatch(thread);
    // The thread ran this very task: its value is the task's output.
    if (reply.ok) return reply.value as TaskOutput<K>;
    throw failures.refused(reply.code, reply.message);
  }

  /**
   * Starts a thread for `task` before it is needed, so that its modules load while the caller
   * does other work (a crawl reading its sitemap), when none of its kind is idle, nothing waits
   * and the budget has room. It waits idle for the first such task.
   */
  warm(task: TaskName, bounds: Pick<SandboxBounds, "maxHeapMb">): void {
    const heapMb = this.heapFor(bounds);
    if (this.queue.length > 0 || this.idle.some((idle) => idle.fits === fits(task, heapMb))) return;
    const thread = this.spawn(task, heapMb);
    if (!thread) return;
    // A thread that fails to start is dropped; the task that takes it sees why.
    thread.ready.catch(() => undefined);
    this.park(thread);
  }

  /** The heap limit of a task's thread: what it asks for, at most what the budget holds. */
  private heapFor(bounds: Pick<SandboxBounds, "maxHeapMb">): number {
    return Math.min(bounds.maxHeapMb, this.budget.capacityMb - THREAD_OVERHEAD_MB);
  }

  /** Waits in line, at most `waitMs`, for a thread for this task and heap limit. */
  private thread(task: TaskName, heapMb: number, waitMs: number): Promise<Thread> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        task,
        heapMb,
        start: (thread) => {
          clearTimeout(timer);
          resolve(thread);
        },
        fail: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.queue.splice(this.queue.indexOf(waiter), 1);
        const { reservedMb, capacityMb } = this.budget;
        reject(
          new Error(
            `No sandbox thread free within ${waitMs / 1000} seconds (${this.running} of ` +
              `${this.maxRunning} running, ${reservedMb} of ${capacityMb} MB reserved)`,
          ),
        );
        // Those behind it may fit now.
        this.dispatch();
      }, waitMs);
      this.queue.push(waiter);
      this.dispatch();
    });
  }

  /**
   * Gives waiting tasks threads, first come first served, while fewer than `maxRunning` run:
   * `done` (a thread that just answered) when it fits the first in line, else an idle one, else a
   * new one if the budget has room. When it has none, threads no one can use now are ended to
   * free their memory (their exit dispatches again). A thread left over goes idle.
   */
  private dispatch(done?: Thread) {
    let free = done;
    for (let head = this.queue[0]; head && this.running < this.maxRunning; head = this.queue[0]) {
      const wanted = fits(head.task, head.heapMb);
      const idleAt = this.idle.findIndex((thread) => thread.fits === wanted);
      let thread: Thread | undefined;
      if (free?.fits === wanted) {
        thread = free;
        free = undefined;
      } else if (idleAt >= 0) {
        thread = this.idle.splice(idleAt, 1)[0];
      } else {
        try {
          thread = this.spawn(head.task, head.heapMb);
        } catch (err) {
          this.queue.shift();
          head.fail(err);
          continue;
        }
      }
      if (!thread) {
        if (free) void free.worker.terminate();
        for (const unused of this.idle.splice(0)) void unused.worker.terminate();
        return;
      }
      this.queue.shift();
      this.running++;
      head.start(thread);
    }
    if (free) this.park(free);
  }

  /** A new thread, if the budget has room for its heap limit; undefined if not. */
  private spawn(task: TaskName, heapMb: number): Thread | undefined {
    const mb = heapMb + THREAD_OVERHEAD_MB;
    if (!this.budget.tryReserve(mb)) return undefined;
    let worker: Worker;
    try {
      worker = new Worker(this.script.url, {
        workerData: { entry: this.script.entry, task },
        resourceLimits: {
          maxOldGenerationSizeMb: heapMb,
          maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
        },
      });
    } catch (err) {
      this.budget.release(mb);
      throw err;
    }
    const silence = () => new Error(`The sandbox thread did not start in ${STARTUP_MS / 1000} s`);
    const ready = nextMessage(worker, STARTUP_MS, silence).catch((err: unknown) => {
      void worker.terminate();
      throw err;
    });
    const thread = { worker, fits: fits(task, heapMb), ready };
    // An idle thread that fails or ends is simply dropped; unhandled, its error would end the process.
    const drop = () => {
      const at = this.idle.indexOf(thread);
      if (at >= 0) this.idle.splice(at, 1);
    };
    worker.on("error", drop).once("exit", () => {
      drop();
      this.budget.release(mb);
      this.dispatch();
    });
    return thread;
  }

  /**
   * Keeps a thread for the next task of its kind, unreferenced, or ends it when enough of its
   * kind are kept. Per kind, because a worker alternates kinds (a crawl page is read, then its
   * source chunked): one shared pool of two would end a warm thread of one kind to keep the
   * other, and every page would pay a thread's start-up (about a second with jsdom). Idle threads
   * hold memory only while nobody needs it: a task the budget cannot fit ends them (`dispatch`).
   */
  private park(thread: Thread) {
    if (this.idle.filter((idle) => idle.fits === thread.fits).length < this.maxRunning) {
      thread.worker.unref();
      this.idle.push(thread);
    } else {
      void thread.worker.terminate();
    }
  }
}

/** The process's sandbox: every file parsed and page read shares its one memory budget. */
export const sandbox = new Sandbox(new MemoryBudget(processBudgetMb()));
