import { AsyncLocalStorage } from "node:async_hooks";
import { Logger } from "@aws-lambda-powertools/logger";

/** Keys every log line of one unit of work carries: an API request, or a queue message handled. */
export interface LogScope {
  /** Follows a piece of work from the API request that started it through every queue hop. */
  correlation_id?: string | undefined;
  [key: string]: unknown;
}

const scope = new AsyncLocalStorage<LogScope>();

/**
 * Powertools Logger whose lines also carry the keys of the unit of work they belong to. Keys are
 * scoped to the async context, not appended to the shared logger (`appendKeys`): a worker handles
 * its batch's records at once, and the local runtime serves every function in one process, so
 * appended keys would land on the lines of whichever record or request logged next.
 */
class ScopedLogger extends Logger {
  protected override createAndPopulateLogItem(
    ...args: Parameters<Logger["createAndPopulateLogItem"]>
  ) {
    const item = super.createAndPopulateLogItem(...args);
    const keys = scope.getStore();
    return keys ? item.addAttributes(keys) : item;
  }
}

/** One structured JSON logger for the whole service (level from POWERTOOLS_LOG_LEVEL). */
export const logger = new ScopedLogger({ serviceName: "kb-intel" });

/** Runs `work` with `keys` added to every line it logs (to those of an enclosing scope). */
export function withLogKeys<T>(keys: LogScope, work: () => T): T {
  return scope.run({ ...scope.getStore(), ...keys }, work);
}

/** The correlation id of the work running now, to pass on with the work it starts. */
export const correlationId = (): string | undefined => scope.getStore()?.correlation_id;
