import { ParseError } from "./errors.js";
import type { ParseLimits } from "./limits.js";
import { type ContentFormat, FORMAT_NAMES, sniff } from "./sniff.js";
import type { FileKind } from "./types.js";
import { zipEntryNames } from "./zip.js";

const KIND_NAMES: Record<FileKind, string> = {
  pdf: "a PDF document",
  docx: "a Word document (.docx)",
  html: "an HTML page",
  markdown: "a Markdown file",
  text: "a text file",
  csv: "a CSV file",
};

const expectedFormat = (kind: FileKind): ContentFormat =>
  kind === "pdf" ? "pdf" : kind === "docx" ? "zip" : "text";

const mismatch = (kind: FileKind, actual: string) =>
  new ParseError(
    "type_mismatch",
    `The file is declared as ${KIND_NAMES[kind]} but holds ${actual}`,
  );

/**
 * Checks that a file's bytes are what its name and content type say, in the calling thread and
 * before any parser runs. For a DOCX that includes its ZIP central directory (entry count and
 * declared sizes), so a zip bomb is refused without inflating a byte.
 */
export async function confirmKind(
  kind: FileKind,
  bytes: Uint8Array,
  limits: Pick<ParseLimits, "maxZipEntries" | "maxUnzippedBytes">,
): Promise<void> {
  const format = sniff(bytes);
  if (kind === "docx" && format === "encrypted_office") {
    throw new ParseError(
      "encrypted",
      "The Word document is password-protected; upload it without a password",
    );
  }
  if (format !== expectedFormat(kind)) throw mismatch(kind, FORMAT_NAMES[format]);
  if (kind === "docx" && !(await zipEntryNames(bytes, limits)).includes("word/document.xml")) {
    throw mismatch(kind, "a ZIP archive that is not a Word document");
  }
}
