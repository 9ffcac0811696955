import { totalmem } from "node:os";

/**
 * One memory budget per process for the sandbox's threads (sandbox.ts), in MB. A thread reserves
 * its whole heap limit before it starts and returns it when it exits, so however many files and
 * pages are parsed at once, their threads together never hold more than the budget. Who waits
 * for memory, and how long, is the sandbox's business: this only keeps the account.
 */
export class MemoryBudget {
  private reserved = 0;

  constructor(readonly capacityMb: number) {}

  get reservedMb(): number {
    return this.reserved;
  }

  /** Reserves `mb` if it fits what is left; false (and nothing reserved) if it does not. */
  tryReserve(mb: number): boolean {
    if (this.reserved + mb > this.capacityMb) return false;
    this.reserved += mb;
    return true;
  }

  release(mb: number): void {
    this.reserved -= mb;
  }
}

const MB = 1024 * 1024;
/** Share of a Lambda function's memory for sandbox threads; the rest is the main thread's. */
const FUNCTION_SHARE = 0.6;
/** Locally (one process runs every function): a quarter of the machine's memory, at most this. */
const LOCAL_MAX_MB = 2048;

/**
 * The sandbox budget of this process: 60% of the Lambda function's memory
 * (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, 614 MB of the index and crawl workers' 1,024), or locally a
 * quarter of the machine's memory, at most 2 GB.
 */
export function processBudgetMb(env = process.env, machineBytes = totalmem()): number {
  const functionMb = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE);
  if (Number.isInteger(functionMb) && functionMb > 0)
    return Math.floor(functionMb * FUNCTION_SHARE);
  return Math.min(LOCAL_MAX_MB, Math.floor(machineBytes / 4 / MB));
}
