import { getDocumentProxy } from "unpdf";
import { ParseError } from "./errors.js";
import type { ParseLimits } from "./limits.js";

interface Line {
  text: string;
  /** The largest font size on the line. */
  size: number;
}

interface TextItem {
  str: string;
  transform: number[];
  hasEOL: boolean;
}

const isTextItem = (item: object): item is TextItem => "str" in item;

/** The font size of an item: the vertical scale of its text matrix. */
const fontSize = (item: TextItem) => Math.hypot(item.transform[2] ?? 0, item.transform[3] ?? 0);

function toLines(items: object[]): Line[] {
  const lines: Line[] = [];
  let text = "";
  let size = 0;
  const end = () => {
    if (text.trim()) lines.push({ text: text.replaceAll("\f", " ").trim(), size });
    text = "";
    size = 0;
  };
  for (const item of items) {
    if (!isTextItem(item)) continue;
    text += item.str;
    if (item.str.trim()) size = Math.max(size, fontSize(item));
    if (item.hasEOL) end();
  }
  end();
  return lines;
}

/** The font size most of the text is set in, weighted by characters. */
function bodySize(lines: Line[]): number {
  const weights = new Map<number, number>();
  for (const line of lines) {
    const size = Math.round(line.size * 2) / 2;
    weights.set(size, (weights.get(size) ?? 0) + line.text.length);
  }
  let best = 0;
  let bestWeight = -1;
  for (const [size, weight] of weights) {
    if (weight > bestWeight) [best, bestWeight] = [size, weight];
  }
  return best;
}

/**
 * A PDF has no heading markup, so a short line set clearly larger than the body text is taken
 * for one and written as a Markdown heading: the chunker then records it for citations.
 */
function render(line: Line, body: number): string {
  const isHeading =
    body > 0 && line.size >= body * 1.25 && line.text.length <= 120 && /\p{L}/u.test(line.text);
  if (!isHeading) return line.text.replace(/^#/, "\\#");
  return `${line.size >= body * 1.6 ? "#" : "##"} ${line.text}`;
}

function toParseError(err: unknown): ParseError {
  const name = err instanceof Error ? err.name : "";
  if (name === "PasswordException") {
    return new ParseError(
      "encrypted",
      "The PDF is password-protected; upload it without a password",
    );
  }
  const detail = err instanceof Error ? err.message : String(err);
  return new ParseError("corrupt", `The PDF is damaged or incomplete (${detail})`);
}

/**
 * The text layer of a PDF, one page after another with a form feed between pages, so chunks
 * keep their page numbers. pdf.js runs with eval disabled: a font program never becomes code.
 */
export async function pdfText(
  bytes: Uint8Array,
  limits: Pick<ParseLimits, "maxPages">,
): Promise<string> {
  const pdf = await getDocumentProxy(new Uint8Array(bytes), {
    isEvalSupported: false,
    enableXfa: false,
    disableFontFace: true,
    verbosity: 0,
  }).catch((err: unknown) => {
    throw toParseError(err);
  });
  try {
    if (pdf.numPages > limits.maxPages) {
      throw new ParseError(
        "too_large",
        `The PDF has ${pdf.numPages} pages; at most ${limits.maxPages} are accepted`,
      );
    }
    const pages: Line[][] = [];
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number);
      pages.push(toLines((await page.getTextContent()).items));
      page.cleanup();
    }
    if (pages.every((lines) => lines.length === 0)) {
      throw new ParseError(
        "no_text_layer",
        "The PDF has no text layer (a scan or images only); run OCR on it and upload the result",
      );
    }
    const body = bodySize(pages.flat());
    return pages.map((lines) => lines.map((line) => render(line, body)).join("\n")).join("\f");
  } catch (err) {
    throw err instanceof ParseError ? err : toParseError(err);
  } finally {
    await pdf.destroy();
  }
}
