import { confirmKind } from "./detect.js";
import { ParseError, type ParseErrorCode } from "./errors.js";
import { DEFAULT_PARSE_LIMITS, megabytes, type ParseLimits } from "./limits.js";
import { type Failures, type Sandbox, sandbox } from "./sandbox.js";
import { decodeText, finishText } from "./text.js";
import { declaredType, type FileKind } from "./types.js";

export interface FileInput {
  bytes: Uint8Array;
  /** The original file name; its extension counts as a declaration of the type. */
  filename: string;
  contentType?: string | null | undefined;
}

/**
 * Main text of an HTML page (the same extractor as URL sources use, bounded in its own sandbox
 * thread). It throws a ParseError for a page it refuses; any other error is an outage, as for
 * the other parsers.
 */
export type HtmlExtractor = (html: string) => Promise<{ text: string }> | { text: string };

export interface ParseOptions {
  limits?: Partial<ParseLimits>;
  /** Needed for HTML files; without it they are unsupported. */
  extractHtml?: HtmlExtractor;
  /** Where files are parsed; the process's sandbox (and memory budget) by default. */
  sandbox?: Sandbox;
  /**
   * The caller needs the bytes no more: they move into the parser's thread rather than being
   * copied, so a large file is held once (the caller's `bytes` are emptied).
   */
  handOver?: boolean;
}

/** The buffer of bytes that own it whole (a slice of a shared pool is copied, never moved). */
const ownBuffer = (bytes: Uint8Array): ArrayBuffer[] =>
  bytes.buffer instanceof ArrayBuffer &&
  bytes.byteOffset === 0 &&
  bytes.byteLength === bytes.buffer.byteLength
    ? [bytes.buffer]
    : [];

export interface ParsedFile {
  kind: FileKind;
  /** Markdown-flavoured text: `#` headings mark sections, form feeds separate PDF pages. */
  text: string;
}

/** How a parse that did not answer fails: a ParseError, the file's own fault. */
const PARSE_FAILURES: Failures = {
  // The parser thread refuses files with ParseErrors only.
  refused: (code, message) => new ParseError(code as ParseErrorCode, message),
  timedOut: (seconds) => new ParseError("timeout", `Parsing took longer than ${seconds} seconds`),
  outOfMemory: (heapMb) =>
    new ParseError("too_large", `Parsing needed more than ${heapMb} MB of memory`),
};

/**
 * Turns a stored file into text for the chunker. Cheap checks run here (size, declared type,
 * the bytes' real format); the parsing itself runs in a bounded thread (sandbox.ts). Every file
 * that cannot be indexed fails with a ParseError; any other error is an outage worth a retry.
 */
export async function parseFile(input: FileInput, options: ParseOptions = {}): Promise<ParsedFile> {
  const limits: ParseLimits = { ...DEFAULT_PARSE_LIMITS, ...options.limits };
  const { bytes } = input;
  if (bytes.byteLength === 0) throw new ParseError("empty", "The file is empty");
  if (bytes.byteLength > limits.maxBytes) {
    throw new ParseError("too_large", `The file is larger than ${megabytes(limits.maxBytes)}`);
  }
  const declared = declaredType(input.filename, input.contentType);
  if (!declared.ok) {
    const code = declared.reason === "conflict" ? "type_mismatch" : "unsupported_type";
    throw new ParseError(code, declared.message);
  }
  const { kind } = declared;
  await confirmKind(kind, bytes, limits);
  if (kind !== "html") {
    const job = { kind, bytes, limits };
    return {
      kind,
      text: await (options.sandbox ?? sandbox).run(
        "parse",
        job,
        limits,
        PARSE_FAILURES,
        options.handOver ? ownBuffer(bytes) : [],
      ),
    };
  }
  if (!options.extractHtml) {
    throw new ParseError("unsupported_type", "HTML files cannot be indexed here");
  }
  if (bytes.byteLength > limits.maxHtmlBytes) {
    throw new ParseError(
      "too_large",
      `HTML files are limited to ${megabytes(limits.maxHtmlBytes)}`,
    );
  }
  const { text } = await options.extractHtml(decodeText(bytes));
  return { kind, text: finishText(text.replaceAll("\f", "\n"), limits) };
}
