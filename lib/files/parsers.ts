import { csvText } from "./csv.js";
import type { ParseLimits } from "./limits.js";
import { decodeText, finishText, markdownText, plainText } from "./text.js";
import type { FileKind } from "./types.js";

/** One file for the sandbox thread; HTML is not among them (parse.ts injects its extractor). */
export interface ParseJob {
  kind: Exclude<FileKind, "html">;
  bytes: Uint8Array;
  limits: ParseLimits;
}

/** Runs the parser of a kind; PDF and DOCX libraries load only when such a file comes. */
async function extract({ kind, bytes, limits }: ParseJob): Promise<string> {
  switch (kind) {
    case "pdf":
      return (await import("./pdf.js")).pdfText(bytes, limits);
    case "docx":
      return (await import("./docx.js")).docxText(bytes, limits);
    case "markdown":
      return markdownText(decodeText(bytes));
    case "text":
      return plainText(decodeText(bytes));
    case "csv":
      return csvText(decodeText(bytes), limits);
  }
}

export async function runParser(job: ParseJob): Promise<string> {
  return finishText(await extract(job), job.limits);
}
