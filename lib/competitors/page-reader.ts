import { type Sandbox, type SandboxBounds, sandbox } from "../files/sandbox.js";
import { EXTRACT_FAILURES } from "../web/extract.js";
import type { Readings, Role } from "./document-roles.js";

/**
 * Reads a fetched document as `role` (document-roles.ts) in a sandbox thread, so the calling event loop
 * (an API answering other clients, a worker with other checks in flight) never parses a page.
 * Rejects with an ExtractionError when the page is refused (too deep), takes longer than its
 * deadline or needs more than its heap limit; with a plain Error when the process has no memory
 * free for a thread in time.
 */
export type PageReader = <R extends Role>(
  role: R,
  url: string,
  text: string,
) => Promise<Readings[R]>;

/**
 * A page of 30,000 links (650 KB) takes about 2 s of one core and 30 MB of heap to parse and read,
 * well within these bounds; a 5 MB page of them (the fetcher's limit) fails. Within an API check,
 * a page fetched just before the reading budget (18 s) runs out is still read in time to answer.
 */
export const PAGE_BOUNDS: SandboxBounds = { timeoutMs: 5_000, maxHeapMb: 128 };

/** Reads pages within `bounds`, in the process's sandbox (and memory budget) by default. */
export function pageReader(bounds = PAGE_BOUNDS, where: Sandbox = sandbox): PageReader {
  return async (role, url, text) => {
    const reading = await where.run("observe", { role, url, text }, bounds, EXTRACT_FAILURES);
    // The thread read this very role: the reading is that role's.
    return reading as Readings[typeof role];
  };
}
