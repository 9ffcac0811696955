import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";

/** One load run: autocannon against one URL at a fixed concurrency, for a bounded time. */
export interface LoadJob {
  url: string;
  method: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
}

export interface LoadResult {
  /** Every 2xx response's latency, in ms. */
  latencies: number[];
  /** 2xx responses per second over the run. */
  throughput: number;
  /** Responses that were not 2xx, and request errors and timeouts. */
  failures: number;
  /** The status of the first failed response, to say what went wrong. */
  firstFailure?: number;
}

/**
 * autocannon in a child process: run in the server's own process it would share the event loop
 * and the core it measures. One child serves every job of a run (tsx loads once).
 */
export class LoadClient {
  private readonly child: ChildProcess;
  private pending: { resolve(result: LoadResult): void; reject(err: Error): void } | undefined;

  constructor() {
    this.child = fork(join(import.meta.dirname, "load-client.ts"), [], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.child.on("message", (result) => this.settle()?.resolve(result as LoadResult));
    this.child.on("exit", (code) =>
      this.settle()?.reject(new Error(`the load client exited with ${code}`)),
    );
  }

  private settle() {
    const pending = this.pending;
    this.pending = undefined;
    return pending;
  }

  run(job: LoadJob): Promise<LoadResult> {
    if (this.pending) throw new Error("one load job at a time");
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.child.send(job);
    });
  }

  close(): void {
    this.child.kill();
  }
}
