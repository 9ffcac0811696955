import { confirmKind } from "./detect.js";
import { ParseError } from "./errors.js";
import { DEFAULT_PARSE_LIMITS, megabytes, type ParseLimits } from "./limits.js";
import { parseInWorker } from "./sandbox.js";
import { decodeText, finishText } from "./text.js";
import { declaredType, type FileKind } from "./types.js";

export interface FileInput {
  bytes: Uint8Array;
  /** The original file name; its extension counts as a declaration of the type. */
  filename: string;
  contentType?: string | null | undefined;
}

/**
 * Main text of an HTML page (the same extractor as URL sources use). It should throw a
 * ParseError for a page it refuses; any other error it throws fails the file as `corrupt`.
 */
export type HtmlExtractor = (html: string) => Promise<{ text: string }> | { text: string };

export interface ParseOptions {
  limits?: Partial<ParseLimits>;
  /** Needed for HTML files; without it they are unsupported. */
  extractHtml?: HtmlExtractor;
  /** The parser thread's script, when it is not where sandbox.ts looks for it. */
  workerUrl?: URL;
}

export interface ParsedFile {
  kind: FileKind;
  /** Markdown-flavoured text: `#` headings mark sections, form feeds separate PDF pages. */
  text: string;
}

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
    return { kind, text: await parseInWorker({ kind, bytes, limits }, options.workerUrl) };
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
  const { text } = await extractWith(options.extractHtml, decodeText(bytes));
  return { kind, text: finishText(text.replaceAll("\f", "\n"), limits) };
}

/** The extractor parses nothing but the page, so whatever it throws is about the page. */
async function extractWith(extract: HtmlExtractor, html: string): Promise<{ text: string }> {
  try {
    return await extract(html);
  } catch (err) {
    if (err instanceof ParseError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new ParseError("corrupt", `The HTML page cannot be read (${detail})`);
  }
}
