import { parentPort, workerData } from "node:worker_threads";
import type { Readings, ReadJob, Role } from "../competitors/document-roles.js";
import type { Chunk, ChunkingOptions } from "../knowledge/indexing/chunking.js";
import { type ExtractedPage, ExtractionError, type PageJob } from "../web/page.js";
import { ParseError } from "./errors.js";
import { type ParseJob, runParser } from "./parsers.js";

/**
 * The sandbox's thread (see sandbox.ts): started for one task (`workerData.task`), it loads that
 * task's modules, says "ready", then runs each request it is sent, one at a time, and posts a
 * reply. The tasks: parsing a file (parsers.ts), reading a web page (lib/web/readable.ts, with
 * jsdom, so only page threads load jsdom) and reading a competitor's page, feed or sitemap into
 * the plain facts a check keeps (lib/competitors/document-roles.ts, with htmlparser2), and chunking a
 * source's text for indexing (a megabyte of tiny sentences takes about a second). A refusal
 * (ParseError, ExtractionError) is a reply; any other error escapes as the thread's `error` event:
 * a bug or an outage, not bad content, and the thread is discarded.
 */
export interface SandboxTasks {
  parse: { input: ParseJob; output: string };
  extract: { input: PageJob; output: ExtractedPage };
  observe: { input: ReadJob; output: Readings[Role] };
  chunk: { input: { text: string; options: ChunkingOptions }; output: Chunk[] };
}

export type SandboxRequest = {
  [K in keyof SandboxTasks]: { task: K; input: SandboxTasks[K]["input"] };
}[keyof SandboxTasks];

export type SandboxReply =
  | { ok: true; value: unknown }
  | { ok: false; code: string; message: string };

/** Loads a task's modules before the thread says it is ready: its deadline is the content's. */
async function prepare(task: keyof SandboxTasks): Promise<unknown> {
  switch (task) {
    case "parse":
      // PDF and Word libraries load with the first such file (parsers.ts).
      return;
    case "extract":
      return import("../web/readable.js");
    case "observe":
      return import("../competitors/document-roles.js");
    case "chunk":
      return import("../knowledge/indexing/chunking.js");
  }
}

async function perform(request: SandboxRequest): Promise<unknown> {
  switch (request.task) {
    case "parse":
      return runParser(request.input);
    case "extract":
      return (await import("../web/readable.js")).readPage(request.input);
    case "observe":
      return (await import("../competitors/document-roles.js")).readDocument(request.input);
    case "chunk": {
      const { text, options } = request.input;
      return (await import("../knowledge/indexing/chunking.js")).chunkDocument(text, options);
    }
  }
}

async function reply(request: SandboxRequest): Promise<SandboxReply> {
  try {
    return { ok: true, value: await perform(request) };
  } catch (err) {
    if (err instanceof ParseError || err instanceof ExtractionError) {
      return { ok: false, code: err.code, message: err.message };
    }
    throw err;
  }
}

await prepare((workerData as { task: keyof SandboxTasks }).task);
parentPort?.postMessage("ready");
parentPort?.on("message", (request: SandboxRequest) => {
  reply(request).then(
    (answer) => parentPort?.postMessage(answer),
    (err: unknown) => {
      // Rethrown outside the promise chain, so it ends the thread as an uncaught error.
      setImmediate(() => {
        throw err;
      });
    },
  );
});
