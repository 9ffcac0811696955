/** Bounds on one parse, so a hostile file fails its own source and nothing else. */
export interface ParseLimits {
  /** Largest file parsed at all, in bytes (the presigned upload limit). */
  maxBytes: number;
  /** Wall-clock time of one parse; the parser's thread is terminated after it. */
  timeoutMs: number;
  /** V8 old-generation heap of the parser's thread, in MB (reserved from the budget, budget.ts). */
  maxHeapMb: number;
  /** Entries of a DOCX (ZIP) container. */
  maxZipEntries: number;
  /** Total uncompressed size of a DOCX's entries, declared and actual, in bytes. */
  maxUnzippedBytes: number;
  /** Pages of a PDF. */
  maxPages: number;
  /** Data rows of a CSV. */
  maxRows: number;
  /** Largest HTML file; its extractor has bounds of its own (lib/web/page.ts). */
  maxHtmlBytes: number;
  /** Characters of extracted text. */
  maxTextChars: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxBytes: 50 * 1024 * 1024,
  timeoutMs: 30_000,
  maxHeapMb: 384,
  maxZipEntries: 5_000,
  maxUnzippedBytes: 256 * 1024 * 1024,
  maxPages: 2_000,
  maxRows: 50_000,
  maxHtmlBytes: 5 * 1024 * 1024,
  maxTextChars: 5_000_000,
};

/** A byte count for messages: `50 MB`, `4.5 MB`. */
export const megabytes = (bytes: number) => `${Number((bytes / (1024 * 1024)).toFixed(1))} MB`;
