import { markupShape } from "./markup.js";

/**
 * What extracting a page means, shared by the calling side (extract.ts) and the sandbox thread
 * that does the work (readable.ts): the limits, the result, and the refusals.
 */

export type ExtractionErrorCode =
  | "too_large"
  | "too_complex"
  | "empty_content"
  | "timeout"
  /** The page shows only a wall (a cookie-consent banner) where its content should be. */
  | "blocked";

export class ExtractionError extends Error {
  constructor(
    readonly code: ExtractionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ExtractionError";
  }
}

export interface ExtractLimits {
  maxBytes: number;
  /** Most elements parsed; counted in the markup before parsing. */
  maxElements: number;
  /** Deepest nesting of elements parsed; measured in the markup before parsing. */
  maxDepth: number;
  /** Most links reported. */
  maxLinks: number;
  /** Wall-clock time of one extraction; its thread is terminated after it. */
  timeoutMs: number;
  /** V8 old-generation heap of the extraction thread, in MB. */
  maxHeapMb: number;
}

/**
 * Nesting beyond which a page is refused. Readability's time grows steeply with depth (on one
 * core, about 1 s at 256 levels, 6 s at 512, 12 s at 800); real pages stay far below it.
 */
export const MAX_DEPTH = 256;

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxBytes: 3 * 1024 * 1024,
  maxElements: 60_000,
  maxDepth: MAX_DEPTH,
  maxLinks: 2000,
  timeoutMs: 10_000,
  maxHeapMb: 192,
};

export interface ExtractedPage {
  title: string | null;
  /** The readable content as Markdown, headed by the title. */
  markdown: string;
  /** Absolute, canonical http(s) links in page order, without duplicates or `rel=nofollow`. */
  links: string[];
  /** The page's `rel=canonical`, canonicalised. */
  canonical: string | null;
  /** False when `<meta name="robots">` says noindex. */
  index: boolean;
  /** False when `<meta name="robots">` says nofollow. */
  follow: boolean;
}

/** One page for the sandbox thread. */
export interface PageJob {
  body: Uint8Array | string;
  /** Where the page was fetched from: links resolve against it. */
  url: string;
  /** From the response's Content-Type; a `<meta charset>` in the page is honoured otherwise. */
  charset?: string | undefined;
  maxLinks: number;
}

/**
 * Refuses markup with more elements or deeper nesting than a DOM should be built for, from one
 * linear pass over it (markup.ts), before any parser runs.
 */
export function checkMarkup(
  body: string | Uint8Array,
  limits: Pick<ExtractLimits, "maxDepth"> & Partial<Pick<ExtractLimits, "maxElements">>,
): void {
  const { elements, depth } = markupShape(body);
  if (depth > limits.maxDepth) {
    throw new ExtractionError(
      "too_complex",
      `The page nests elements more than ${limits.maxDepth} levels deep`,
    );
  }
  if (limits.maxElements !== undefined && elements > limits.maxElements) {
    throw new ExtractionError(
      "too_complex",
      `The page has more than ${limits.maxElements} elements`,
    );
  }
}
