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
}

export interface Chunk {
  index: number;
  text: string;
  /** The headings above the chunk, outermost first, joined with " > ". */
  heading: string | null;
  /** The page the chunk starts on, for paged documents. */
  page?: number;
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

interface Section {
  heading: string | null;
  page: number | undefined;
  paragraphs: string[];
}

function sections(text: string, paged: boolean): Section[] {
  const result: Section[] = [];
  const trail: string[] = [];
  let page = paged ? 1 : undefined;
  let current: Section = { heading: null, page, paragraphs: [] };
  let paragraph: string[] = [];
  const endParagraph = () => {
    const joined = paragraph.join("\n").trim();
    if (joined) current.paragraphs.push(joined);
    paragraph = [];
  };
  const startSection = (heading: string | null) => {
    endParagraph();
    if (current.paragraphs.length > 0) result.push(current);
    current = { heading, page, paragraphs: [] };
  };
  for (const rawLine of text.split("\n")) {
    const pageBreaks = paged ? rawLine.split(PAGE_BREAK).length - 1 : 0;
    const line = pageBreaks ? rawLine.replaceAll(PAGE_BREAK, "") : rawLine;
    if (pageBreaks && page !== undefined) {
      endParagraph();
      if (current.paragraphs.length > 0) startSection(current.heading);
      page += pageBreaks;
      current.page = page;
    }
    const heading = headingOf(line);
    if (heading) {
      const { level, text } = heading;
      trail.length = Math.min(trail.length, level - 1);
      trail[level - 1] = text;
      startSection(trail.filter(Boolean).join(" > "));
    } else if (line.trim() === "") {
      endParagraph();
    } else {
      paragraph.push(line);
    }
  }
  startSection(null);
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
function sentences(paragraph: string): string[] {
  const found: string[] = [];
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
      start += segment.length;
      const trimmed = segment.trim();
      if (trimmed) found.push(trimmed);
    }
    width = SENTENCE_WINDOW;
  }
  return found;
}

/** Cuts an over-long piece at word boundaries (or anywhere, for text without spaces). */
function hardSplit(piece: string, size: number): string[] {
  const parts: string[] = [];
  let rest = piece;
  while (rest.length > size) {
    const cut = rest.lastIndexOf(" ", size);
    const at = cut > size / 2 ? cut : size;
    parts.push(rest.slice(0, at).trim());
    rest = rest.slice(at).trim();
  }
  if (rest) parts.push(rest);
  return parts;
}

/** The units a section packs from: whole paragraphs, or sentences of paragraphs that are too long. */
function units(section: Section, size: number): string[][] {
  return section.paragraphs.map((p) =>
    p.length <= size
      ? [p]
      : sentences(p).flatMap((s) => (s.length <= size ? [s] : hardSplit(s, size))),
  );
}

export function chunkText(text: string, options: ChunkingOptions): Chunk[] {
  return chunkDocument(normalizeDocument(text), options);
}

/** `chunkText` for text `normalizeDocument` has already cleaned (the indexer hashes it first). */
export function chunkDocument(text: string, options: ChunkingOptions): Chunk[] {
  const { size, overlap } = options;
  const paged = text.includes(PAGE_BREAK);
  const chunks: Chunk[] = [];
  for (const section of sections(text, paged)) {
    let body: string[] = [];
    let length = 0;
    let carried = 0;
    const flush = () => {
      if (body.length > carried) {
        chunks.push({
          index: chunks.length,
          text: body.join(" ").replaceAll(" \n\n", "\n\n").trim(),
          heading: section.heading,
          ...(section.page === undefined ? {} : { page: section.page }),
        });
      }
      // Carry whole trailing sentences into the next chunk, up to the overlap.
      const tail: string[] = [];
      let tailLength = 0;
      for (let i = body.length - 1; i >= 0; i--) {
        const piece = body[i] as string;
        if (tailLength + piece.length > overlap) break;
        tail.unshift(piece);
        tailLength += piece.length + 1;
      }
      body = tail.map((piece, i) => (i === 0 ? piece.trimStart() : piece));
      length = tailLength;
      carried = tail.length;
    };
    for (const paragraph of units(section, size)) {
      for (const [i, piece] of paragraph.entries()) {
        // A paragraph break inside a chunk stays visible as a blank line.
        const unit = i === 0 && body.length > carried ? `\n\n${piece}` : piece;
        if (length + unit.length > size && body.length > carried) flush();
        const cleaned = body.length === 0 ? unit.trimStart() : unit;
        body.push(cleaned);
        length += cleaned.length + 1;
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
