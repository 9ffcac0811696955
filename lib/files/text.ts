import { ParseError } from "./errors.js";
import type { ParseLimits } from "./limits.js";
import { byteOrderMark } from "./sniff.js";

/**
 * Decodes text: UTF-16 only with a byte order mark, otherwise strict UTF-8 (the BOM dropped).
 * Bytes that are not valid in that encoding fail rather than index as replacement characters.
 */
export function decodeText(bytes: Uint8Array): string {
  const encoding = byteOrderMark(bytes) ?? "utf-8";
  try {
    return new TextDecoder(encoding, { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new ParseError(
      "type_mismatch",
      `The file is not valid ${encoding.toUpperCase()} text; save it as UTF-8 and upload it again`,
    );
  }
}

/** The lines of a non-paged document: a form feed would be read as a page break by the chunker. */
const linesOf = (text: string) => text.replace(/\r\n?|\f/g, "\n").split("\n");

/** Makes a line that starts with `#` plain text, so the chunker does not take it for a heading. */
const escapeHeading = (line: string) => line.replace(/^(\s*)#/, "$1\\#");

/**
 * Every line of a text made plain, line by line: one regex over the whole text with the `m` flag
 * would let `\s*` cross blank lines and backtrack quadratically on a run of them.
 */
export const escapeHeadings = (text: string) => text.split("\n").map(escapeHeading).join("\n");

/** Plain text: every line is text, even one starting with `#`. */
export function plainText(text: string): string {
  return escapeHeadings(linesOf(text).join("\n"));
}

const FENCE = /^\s*(```|~~~)/;
const SETEXT = /^(=+|-+)\s*$/;
const BLOCK_START = /^\s*([-*+>|#`~]|\d+[.)]\s|$)/;

/**
 * Markdown as the chunker reads it: ATX headings (`# Title`) mark sections, so setext headings
 * (a line underlined with `===` or `---`) become ATX, and `#` lines inside code fences stay text.
 */
export function markdownText(text: string): string {
  const lines = linesOf(text);
  // YAML front matter stays as it is: its closing `---` is no heading underline.
  const frontMatterEnd = lines[0] === "---" ? lines.indexOf("---", 1) : -1;
  const out = lines.slice(0, frontMatterEnd + 1);
  let fenced = false;
  for (const line of lines.slice(frontMatterEnd + 1)) {
    if (FENCE.test(line)) {
      fenced = !fenced;
      out.push(line);
      continue;
    }
    if (fenced) {
      out.push(escapeHeading(line));
      continue;
    }
    const previous = out.at(-1);
    const underline = SETEXT.exec(line);
    if (underline?.[1] && previous !== undefined && !BLOCK_START.test(previous)) {
      out[out.length - 1] = `${underline[1].startsWith("=") ? "#" : "##"} ${previous.trim()}`;
      continue;
    }
    out.push(line);
  }
  return out.join("\n");
}

/** Refuses extracted text that is blank or longer than the limit. */
export function finishText(text: string, limits: Pick<ParseLimits, "maxTextChars">): string {
  if (!text.replaceAll("\f", "").trim()) {
    throw new ParseError("empty", "The document has no text to index");
  }
  if (text.length > limits.maxTextChars) {
    throw new ParseError(
      "too_large",
      `The document holds more than ${limits.maxTextChars} characters of text`,
    );
  }
  return text;
}
