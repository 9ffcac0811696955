/**
 * Splits a document into overlapping chunks that respect its structure: a chunk never crosses a
 * heading, prefers paragraph breaks, then sentence breaks, and only cuts inside a sentence when
 * one sentence alone is larger than the chunk size.
 */

export interface ChunkingOptions {
  /** Target size of a chunk, in characters. */
  size: number;
  /** Characters of the previous chunk's tail (whole sentences) repeated at a chunk's start. */
  overlap: number;
  /** False: a heading does not end a chunk (it still names the chunks after it). Default true. */
  byHeadings?: boolean;
}

export interface Chunk {
  index: number;
  /** Exactly `document.slice(start, end)` of the text it was chunked from. */
  text: string;
  /** The headings above the chunk, outermost first, joined with " > ". */
  heading: string | null;
  /** The page the chunk starts on, for paged documents. */
  page?: number;
  /**
   * Where the chunk's text lies in the normalized document (UTF-16 code units, end exclusive).
   * The chunker always sets them; chunk sets stored before it did lack them.
   */
  start?: number;
  end?: number;
}

/** Text in, cleaned: Unicode NFC, LF line ends, no control characters, tidy blank lines. */
export function normalizeText(text: string): string {
  return text
    .normalize("NFC")
    .replace(/\r\n?/g, "\n")
    .replace(/\p{Cc}/gu, (ch) => (ch === "\n" || ch === "\t" ? ch : ""))
    .replace(/[\u200B\uFEFF]/g, "")
    .replace(/[ \t\u00A0]+/g, " ")
    .replace(/ *\n */g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/**
 * A Markdown heading line (`## Pricing ##`): one to six `#`, spaces, the text, and optionally
 * spaces and a closing run of `#`. Read by hand in one pass: the regular expression this replaces
 * backtracked quadratically on a long line of `#`.
 */
function headingOf(line: string): { level: number; text: string } | undefined {
  let level = 0;
  while (line[level] === "#") level++;
  if (level < 1 || level > 6 || line[level] !== " ") return undefined;
  let start = level;
  while (line[start] === " ") start++;
  let end = line.length;
  while (end > start && line[end - 1] === "#") end--;
  while (end > start && line[end - 1] === " ") end--;
  // A closing run never takes the text's first character: `# #` is a heading named `#`.
  const text = line.slice(start, Math.max(end, start + 1));
  return text ? { level, text } : undefined;
}
/** A form feed between pages is how paged documents (PDF) mark page breaks before chunking. */
export const PAGE_BREAK = "\f";

/** A span of the document: a paragraph, a sentence or a piece of one, trimmed. */
interface Span {
  start: number;
  end: number;
}

interface Paragraph extends Span {
  /** The heading trail above it. */
  heading: string | null;
}

interface Section {
  page: number | undefined;
  paragraphs: Paragraph[];
}

const isSpace = (ch: string | undefined) => ch !== undefined && ch.trim() === "";

/** The span without the whitespace at either end, as `String.prototype.trim` would cut it. */
function trimSpan(text: string, start: number, end: number): Span {
  let from = start;
  let to = end;
  while (from < to && isSpace(text[from])) from++;
  while (to > from && isSpace(text[to - 1])) to--;
  return { start: from, end: to };
}

/**
 * The document's sections (each between headings, when `byHeadings`, and within one page) and
 * their paragraphs as spans of it. Without `byHeadings` a heading line is a paragraph of its own,
 * and the trail it opens names the paragraphs after it.
 */
function sections(text: string, paged: boolean, byHeadings: boolean): Section[] {
  const result: Section[] = [];
  const trail: string[] = [];
  let page = paged ? 1 : undefined;
  let heading: string | null = null;
  let current: Section = { page, paragraphs: [] };
  let first = -1;
  let last = -1;
  const endParagraph = () => {
    if (first >= 0) {
      const span = trimSpan(text, first, last);
      if (span.end > span.start) current.paragraphs.push({ ...span, heading });
    }
    first = -1;
  };
  const startSection = () => {
    endParagraph();
    if (current.paragraphs.length > 0) result.push(current);
    current = { page, paragraphs: [] };
  };
  let offset = 0;
  for (const rawLine of text.split("\n")) {
    const lineStart = offset;
    offset += rawLine.length + 1;
    const pageBreaks = paged ? rawLine.split(PAGE_BREAK).length - 1 : 0;
    const line = pageBreaks ? rawLine.replaceAll(PAGE_BREAK, "") : rawLine;
    if (pageBreaks && page !== undefined) {
      endParagraph();
      if (current.paragraphs.length > 0) startSection();
      page += pageBreaks;
      current.page = page;
    }
    const found = headingOf(line);
    if (found) {
      const { level, text: title } = found;
      trail.length = Math.min(trail.length, level - 1);
      trail[level - 1] = title;
      if (byHeadings) startSection();
      else endParagraph();
      heading = trail.filter(Boolean).join(" > ");
      if (!byHeadings) {
        first = lineStart;
        last = lineStart + rawLine.length;
        endParagraph();
      }
    } else if (line.trim() === "") {
      endParagraph();
    } else {
      if (first < 0) first = lineStart;
      last = lineStart + rawLine.length;
    }
  }
  startSection();
  return result;
}

const segmenter = new Intl.Segmenter("en", { granularity: "sentence" });

/**
 * Characters of a paragraph the sentence segmenter reads at a time. On Node 20 each segment
 * `Intl.Segmenter` yields costs time and memory in proportion to its whole input, so one paragraph
 * of many sentences took time in their square (20,000 sentences, 15 s and 1.2 GB); a bounded
 * window bounds each segment's cost and makes the split linear.
 */
const SENTENCE_WINDOW = 1024;

/**
 * A paragraph's sentences by Unicode's rules (UAX #29), read window by window. A window's last two
 * segments are read again at the start of the next: the last may be cut short by the window's end,
 * and the one before it holds the terminal (or line break) that ends every look-ahead the rules
 * make for the boundaries before it ("e.g. 5 more" looks past spaces and digits for a lowercase
 * letter), so those boundaries are the ones the whole paragraph has. A sentence longer than the
 * window doubles the window until it is seen whole, reading only its first three segments: a long
 * sentence costs time in its length, never in the sentences after it.
 */
function sentences(paragraph: string): Span[] {
  const found: Span[] = [];
  let start = 0;
  let width = SENTENCE_WINDOW;
  while (start < paragraph.length) {
    const limit = width === SENTENCE_WINDOW ? Number.POSITIVE_INFINITY : 3;
    const segments: string[] = [];
    for (const { segment } of segmenter.segment(paragraph.slice(start, start + width))) {
      segments.push(segment);
      if (segments.length === limit) break;
    }
    const atEnd = start + width >= paragraph.length && segments.length < limit;
    const whole = atEnd ? segments.length : segments.length - 2;
    if (whole <= 0) {
      width *= 2;
      continue;
    }
    for (const segment of segments.slice(0, whole)) {
      const span = trimSpan(paragraph, start, start + segment.length);
      start += segment.length;
      if (span.end > span.start) found.push(span);
    }
    width = SENTENCE_WINDOW;
  }
  return found;
}

/** Cuts an over-long span at word boundaries (or anywhere, for text without spaces). */
function hardSplit(text: string, { start, end }: Span, size: number): Span[] {
  const parts: Span[] = [];
  let from = start;
  while (end - from > size) {
    const cut = text.lastIndexOf(" ", from + size);
    const at = cut - from > size / 2 ? cut : from + size;
    parts.push(trimSpan(text, from, at));
    from = trimSpan(text, at, end).start;
  }
  if (end > from) parts.push({ start: from, end });
  return parts;
}

/** The pieces a section packs from: whole paragraphs, or sentences of paragraphs too long. */
function pieces(text: string, paragraph: Paragraph, size: number): Span[] {
  if (paragraph.end - paragraph.start <= size) return [paragraph];
  const body = text.slice(paragraph.start, paragraph.end);
  return sentences(body).flatMap((sentence) => {
    const span = { start: paragraph.start + sentence.start, end: paragraph.start + sentence.end };
    return span.end - span.start <= size ? [span] : hardSplit(text, span, size);
  });
}

export function chunkText(text: string, options: ChunkingOptions): Chunk[] {
  return chunkDocument(normalizeDocument(text), options);
}

/**
 * `chunkText` for text `normalizeDocument` has already cleaned (the indexer hashes it first). A
 * chunk is a span of the text, so its offsets locate its passage exactly; its size is the span's.
 */
export function chunkDocument(text: string, options: ChunkingOptions): Chunk[] {
  const { size, overlap, byHeadings = true } = options;
  const paged = text.includes(PAGE_BREAK);
  const chunks: Chunk[] = [];
  for (const section of sections(text, paged, byHeadings)) {
    let body: Array<Span & { heading: string | null }> = [];
    let carried = 0;
    const flush = () => {
      const head = body[0];
      const tail = body.at(-1);
      if (head && tail && body.length > carried) {
        chunks.push({
          index: chunks.length,
          text: text.slice(head.start, tail.end),
          heading: head.heading,
          ...(section.page === undefined ? {} : { page: section.page }),
          start: head.start,
          end: tail.end,
        });
      }
      // Carry whole trailing sentences into the next chunk, up to the overlap.
      let keep = body.length;
      while (keep > 0 && tail && tail.end - (body[keep - 1] as Span).start <= overlap) keep--;
      body = body.slice(keep);
      carried = body.length;
    };
    for (const paragraph of section.paragraphs) {
      for (const piece of pieces(text, paragraph, size)) {
        const head = body[0];
        if (head && piece.end - head.start > size && body.length > carried) flush();
        body.push({ ...piece, heading: paragraph.heading });
      }
    }
    flush();
  }
  return chunks;
}

/** Like normalizeText, but keeps the form feeds that mark page breaks. */
export function normalizeDocument(text: string): string {
  return text
    .split(PAGE_BREAK)
    .map((page) => normalizeText(page))
    .join(`\n${PAGE_BREAK}\n`);
}
