import type { IncomingMessage } from "node:http";
import { NodeHttpHandler, type NodeHttpHandlerOptions } from "@smithy/node-http-handler";

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The fairness simulation's clock: virtual time, in epoch ms, that moves only while the night
 * waits on nothing but time. The service's work (its requests to the DynamoDB and SQS emulators,
 * the fixture sites' answers) runs at real speed with the clock standing still, held by `hold`;
 * what takes time in the model (a check's 15 s, a webhook's timeout, a message's delay) waits on
 * `sleep` or on the queues' own clock. Once nothing holds the clock, it jumps to the next time
 * something waits for, in whole ticks: so the waits the night reports are the model's, however
 * loaded the machine, and a night takes as long as its work, not as its hours.
 */
export class VirtualClock {
  private time: number;
  /** Ticks someone sleeps until, in order, and who. */
  private readonly ticks: number[] = [];
  private readonly sleepers = new Map<number, Array<() => void>>();
  private held = 0;
  /** Counts every hold and release: a quiet moment is one in which it does not move. */
  private moves = 0;
  private released: (() => void) | undefined;

  constructor(
    start: number,
    /** Sleeps end on whole ticks of this many ms, so work that falls due together runs together. */
    private readonly tickMs: number,
  ) {
    this.time = Math.ceil(start / tickMs) * tickMs;
  }

  readonly now = (): number => this.time;

  /** Resolves once the clock has moved `ms` on (to the tick at or after it). */
  sleep(ms: number): Promise<void> {
    const at = Math.max(
      this.time + this.tickMs,
      Math.ceil((this.time + ms) / this.tickMs) * this.tickMs,
    );
    return new Promise((resolve) => {
      const waiting = this.sleepers.get(at);
      if (waiting) {
        waiting.push(resolve);
        return;
      }
      this.sleepers.set(at, [resolve]);
      // Few distinct ticks wait at once (a night's hours): an ordered insert is enough.
      let i = this.ticks.length;
      while (i > 0 && (this.ticks[i - 1] as number) > at) i--;
      this.ticks.splice(i, 0, at);
    });
  }

  /** Keeps the clock where it is until the answer is called. */
  hold(): () => void {
    this.held++;
    this.moves++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.held--;
      this.moves++;
      if (this.held === 0) this.released?.();
    };
  }

  /** Runs real work (a request to a fixture site) with the clock held. */
  async real<T>(work: () => Promise<T>): Promise<T> {
    const release = this.hold();
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * Moves the clock until `done`: each time nothing holds it, to the next tick someone sleeps
   * until or `next()` names (a queued message's delay), then `wake()` (the queues start what
   * came due). Throws past `limit`, or when nothing is left to wait for.
   */
  async run(
    done: () => boolean,
    next: () => number | undefined,
    wake: () => void,
    limit: number,
  ): Promise<void> {
    for (;;) {
      await this.quiet();
      if (done()) return;
      const due = Math.min(
        this.ticks[0] ?? Number.POSITIVE_INFINITY,
        Math.ceil((next() ?? Number.POSITIVE_INFINITY) / this.tickMs) * this.tickMs,
      );
      if (!Number.isFinite(due)) throw new Error("the night stopped with work left undone");
      if (due > limit) throw new Error("the night ran past its limit");
      this.time = Math.max(this.time, due);
      while (this.ticks.length > 0 && (this.ticks[0] as number) <= this.time) {
        const tick = this.ticks.shift() as number;
        for (const resolve of this.sleepers.get(tick) ?? []) resolve();
        this.sleepers.delete(tick);
      }
      wake();
    }
  }

  /**
   * Resolves once nothing holds the clock for two turns of the event loop in a row: what a
   * released hold starts (the next request of the same worker) begins within its callbacks.
   */
  private async quiet(): Promise<void> {
    for (;;) {
      if (this.held > 0) {
        await new Promise<void>((resolve) => {
          this.released = resolve;
        });
        this.released = undefined;
      }
      const moves = this.moves;
      await immediate();
      await immediate();
      if (this.held === 0 && this.moves === moves) return;
    }
  }
}

/**
 * The SDK's HTTP handler, holding the clock from a request's start until its answer is read:
 * the emulators' time is not the service's.
 */
export class HeldHttpHandler extends NodeHttpHandler {
  constructor(
    private readonly clock: VirtualClock,
    options: NodeHttpHandlerOptions,
  ) {
    super(options);
  }

  override async handle(
    request: Parameters<NodeHttpHandler["handle"]>[0],
    options?: Parameters<NodeHttpHandler["handle"]>[1],
  ): ReturnType<NodeHttpHandler["handle"]> {
    const release = this.clock.hold();
    try {
      const answered = await super.handle(request, options);
      const body = answered.response.body as IncomingMessage | undefined;
      if (body && typeof body.once === "function" && !body.readableEnded && !body.destroyed) {
        for (const event of ["end", "close", "error"]) body.once(event, release);
      } else release();
      return answered;
    } catch (err) {
      release();
      throw err;
    }
  }
}
