import { AsyncLocalStorage } from "node:async_hooks";
import { Logger, type LogItem } from "@aws-lambda-powertools/logger";

/** Keys every log line of one unit of work carries: an API request, or a queue message handled. */
export interface LogScope {
  /** Follows a piece of work from the API request that started it through every queue hop. */
  correlation_id?: string | undefined;
  [key: string]: unknown;
}

const scope = new AsyncLocalStorage<LogScope>();

/** Lines as the local runtime prints them (`printReadableLines`); Powertools' JSON otherwise. */
let readable = false;

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

  protected override printLog(logLevel: number, log: LogItem): void {
    if (!readable) {
      super.printLog(logLevel, log);
      return;
    }
    log.prepareForPrint();
    // Through Powertools' own replacer: errors become their name, message, stack and cause.
    const line = JSON.parse(JSON.stringify(log.getAttributes(), this.getJsonReplacer())) as Line;
    const text = readableLine(line, ["DEBUG", "TRACE"].includes(this.getLevelName()));
    if (text === undefined) return;
    (line.level === "WARN" || line.level === "ERROR" || line.level === "CRITICAL"
      ? process.stderr
      : process.stdout
    ).write(`${text}\n`);
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

/** What of Lambda's context object the log lines carry (aws-lambda's `Context` has it). */
export interface FunctionContext {
  functionName: string;
  invokedFunctionArn: string;
  memoryLimitInMB: string;
  awsRequestId: string;
}

/** Each function's first invocation in this process: its cold start. */
const firstInvocations = new Map<string, string>();

/**
 * Runs `work` as one invocation of a function: every line it logs carries the invocation's
 * context under Powertools' names (`function_name`, `function_request_id`, `cold_start`...).
 * Scoped like the other keys, for the local runtime, which runs every function in one process
 * and several at once: it invokes each through this, and `invocation` (lib/invocation.ts) then
 * leaves Powertools' process-wide context (`addContext`, right on AWS) alone.
 */
export function withFunctionContext<T>(context: FunctionContext, work: () => T): T {
  const first = firstInvocations.get(context.functionName) ?? context.awsRequestId;
  firstInvocations.set(context.functionName, first);
  return withLogKeys(
    {
      cold_start: first === context.awsRequestId,
      function_arn: context.invokedFunctionArn,
      function_memory_size: context.memoryLimitInMB,
      function_name: context.functionName,
      function_request_id: context.awsRequestId,
    },
    work,
  );
}

/** The function whose invocation is running now, if `withFunctionContext` named one. */
export const scopedFunction = (): string | undefined => {
  const name = scope.getStore()?.function_name;
  return typeof name === "string" ? name : undefined;
};

/**
 * From now on, lines are printed for a person at a terminal (the local runtime, `npm start`)
 * rather than as Powertools' JSON: one line per request and per worker invocation, other lines
 * at WARN and above with their details (an error's stack, the request id) on lines below, and
 * the other INFO lines when POWERTOOLS_LOG_LEVEL is DEBUG. The level still applies (SILENT
 * prints nothing). On AWS nothing calls this: the lines stay JSON.
 */
export function printReadableLines(on = true): void {
  readable = on;
}

type Line = Record<string, unknown>;

/** Powertools' own keys, and the scoped keys `readableLine` shows in its own way. */
const SHOWN_APART = new Set([
  "level",
  "message",
  "timestamp",
  "service",
  "sampling_rate",
  "xray_trace_id",
  "cold_start",
  "function_arn",
  "function_memory_size",
  "function_name",
  "function_request_id",
  "correlation_id",
]);

const clock = (timestamp: unknown) => {
  const at = new Date(String(timestamp));
  return Number.isNaN(at.getTime()) ? "--:--:--" : at.toTimeString().slice(0, 8);
};

/** A value as `key=value` shows it: bare when it is one word, else as JSON. */
const shown = (value: unknown) =>
  typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);

/** An error as Powertools formats it: name, message, stack, cause. */
interface FormattedError {
  name?: string;
  message?: string;
  stack?: string | string[];
  cause?: unknown;
}

const isError = (value: unknown): value is FormattedError =>
  typeof value === "object" && value !== null && "stack" in value && "message" in value;

/** An error's stack (its message first) and its causes', indented under the line. */
function errorLines(key: string, error: FormattedError, indent = "    "): string[] {
  const stack = Array.isArray(error.stack) ? error.stack.join("\n") : (error.stack ?? "");
  const [first = `${error.name}: ${error.message}`, ...rest] = stack.split("\n");
  const lines = [`${indent}${key}: ${first}`, ...rest.map((l) => `${indent}  ${l.trim()}`)];
  return isError(error.cause) ? [...lines, ...errorLines("cause", error.cause, indent)] : lines;
}

/**
 * One log line as a person reads it, or undefined for a line the readable output leaves out
 * (an INFO detail when `details` is off):
 * - a request: `07:31:06 POST /api/knowledge 200 12ms knowledge-api req=…`
 * - a worker's invocation: `07:31:07 index-worker 1 record ok 340ms req=…`
 * - anything else: `07:31:07 WARN index-worker message failed receiveCount=1 req=…`, an error's
 *   stack and cause on the lines below.
 */
export function readableLine(line: Line, details = false): string | undefined {
  const time = clock(line.timestamp);
  const fn = typeof line.function_name === "string" ? line.function_name : undefined;
  const req = line.correlation_id ? ` req=${shown(line.correlation_id)}` : "";
  if (line.message === "request" && line.level === "INFO" && "status" in line) {
    return [
      time,
      line.method,
      line.path,
      line.status,
      `${line.durationMs}ms`,
      ...(fn ? [fn] : []),
      `req=${shown(line.requestId)}`,
    ].join(" ");
  }
  if (line.message === "invocation" && line.level === "INFO") {
    const records = Number(line.records ?? 0);
    const failed = Number(line.failed ?? 0);
    const what =
      "records" in line ? `${records} record${records === 1 ? "" : "s"}` : String(line.trigger);
    const ids = Array.isArray(line.correlationIds) ? ` req=${line.correlationIds.join(",")}` : "";
    const outcome = failed > 0 ? `${failed} failed` : line.ok === false ? "failed" : "ok";
    return `${time} ${fn ?? "?"} ${what} ${outcome} ${line.durationMs}ms${ids}`;
  }
  if (line.level === "INFO" && !details) return undefined;
  const pairs: string[] = [];
  const below: string[] = [];
  for (const [key, value] of Object.entries(line)) {
    // The request id of a request's own lines is its correlation id, shown once as `req=`.
    if (SHOWN_APART.has(key) || (key === "requestId" && value === line.correlation_id)) continue;
    if (isError(value)) below.push(...errorLines(key, value));
    else pairs.push(`${key}=${shown(value)}`);
  }
  const head = [time, line.level, ...(fn ? [fn] : []), line.message, ...pairs].join(" ");
  return [`${head}${req}`, ...below].join("\n");
}
