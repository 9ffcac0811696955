import { type Failures, type Sandbox, sandbox } from "../files/sandbox.js";
import {
  checkMarkup,
  DEFAULT_EXTRACT_LIMITS,
  type ExtractedPage,
  ExtractionError,
  type ExtractionErrorCode,
  type ExtractLimits,
} from "./page.js";

/**
 * Readable content of an HTML page. Cheap, linear checks run here (bytes, elements, nesting
 * depth: page.ts); the page is read in the sandbox (lib/files/sandbox.ts: readable.ts with jsdom,
 * Readability and Turndown) under a deadline and a heap limit drawn from the process's memory
 * budget. So a page of any shape fails on its own within seconds, the calling thread never waits
 * on it, and jsdom never loads in the calling process.
 */

export interface ExtractOptions {
  /** From the response's Content-Type; a `<meta charset>` in the page is honoured otherwise. */
  charset?: string | undefined;
  limits?: Partial<ExtractLimits>;
  /** Where the page is read; the process's sandbox (and memory budget) by default. */
  sandbox?: Sandbox;
}

/** Why a page read in the sandbox (here, or a competitor's: lib/competitors/page-reader.ts) failed. */
export const EXTRACT_FAILURES: Failures = {
  // The page thread refuses pages with ExtractionErrors only.
  refused: (code, message) => new ExtractionError(code as ExtractionErrorCode, message),
  timedOut: (seconds) =>
    new ExtractionError("timeout", `Reading the page took longer than ${seconds} seconds`),
  outOfMemory: (heapMb) =>
    new ExtractionError("too_complex", `Reading the page needed more than ${heapMb} MB of memory`),
};

/** Starts a thread to read pages in before the first page comes (see `Sandbox.warm`). */
export function warmPageReader(options: Pick<ExtractOptions, "limits" | "sandbox"> = {}): void {
  const limits = { ...DEFAULT_EXTRACT_LIMITS, ...options.limits };
  (options.sandbox ?? sandbox).warm("extract", limits);
}

/**
 * Extracts a page fetched from `url`. Rejects with an `ExtractionError` when it is too big, too
 * complex, too slow to read or has no text.
 */
export async function extractPage(
  body: Uint8Array | string,
  url: string,
  options: ExtractOptions = {},
): Promise<ExtractedPage> {
  const limits = { ...DEFAULT_EXTRACT_LIMITS, ...options.limits };
  const bytes = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
  if (bytes > limits.maxBytes) {
    throw new ExtractionError("too_large", `The page is larger than ${limits.maxBytes} bytes`);
  }
  checkMarkup(body, limits);
  const job = { body, url, charset: options.charset, maxLinks: limits.maxLinks };
  return (options.sandbox ?? sandbox).run("extract", job, limits, EXTRACT_FAILURES);
}
