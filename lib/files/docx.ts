import mammoth from "mammoth";
import TurndownService from "turndown";
import { ParseError } from "./errors.js";
import type { ParseLimits } from "./limits.js";
import { formatTable } from "./records.js";
import { escapeHeadings } from "./text.js";
import { verifyZip } from "./zip.js";

/** Word's title styles become headings too; mammoth maps `Heading 1..6` itself. */
const STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"];

const cellsOf = (row: Element) =>
  Array.from(row.children)
    .filter((cell) => cell.nodeName === "TD" || cell.nodeName === "TH")
    .map((cell) => cell.textContent ?? "");

/** The rows of a table, through its optional thead/tbody/tfoot but not into nested tables. */
function tableRows(table: Element): string[][] {
  const rows: string[][] = [];
  for (const child of Array.from(table.children)) {
    const group = child.nodeName === "TR" ? [child] : Array.from(child.children);
    for (const row of group) if (row.nodeName === "TR") rows.push(cellsOf(row));
  }
  return rows;
}

/**
 * HTML to the Markdown the chunker reads: ATX headings, tables as records, and none of the
 * markup that only adds noise to search (emphasis, images, in-document links).
 */
function markdownConverter(): TurndownService {
  const service = new TurndownService({
    headingStyle: "atx",
    bulletListMarker: "-",
    codeBlockStyle: "fenced",
  });
  // Only a leading `#` needs escaping (it would start a section); other Markdown escapes are noise.
  service.escape = escapeHeadings;
  service.addRule("table", {
    filter: "table",
    replacement: (_content, node) => `\n\n${formatTable(tableRows(node)).join("\n\n")}\n\n`,
  });
  service.addRule("plainEmphasis", {
    filter: ["strong", "b", "em", "i", "u"],
    replacement: (content) => content,
  });
  service.addRule("imageAlt", {
    filter: "img",
    replacement: (_c, node) => node.getAttribute("alt") ?? "",
  });
  service.addRule("anchorText", {
    filter: (node) => node.nodeName === "A" && !/^https?:/i.test(node.getAttribute("href") ?? ""),
    replacement: (content) => content,
  });
  return service;
}

/** A Word document (DOCX) as Markdown, after its ZIP container is checked against the limits. */
export async function docxText(
  bytes: Uint8Array,
  limits: Pick<ParseLimits, "maxZipEntries" | "maxUnzippedBytes">,
): Promise<string> {
  await verifyZip(bytes, limits);
  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      {
        styleMap: STYLE_MAP,
        // Images are never read: only their alt text is kept.
        convertImage: mammoth.images.imgElement(async () => ({ src: "" })),
        externalFileAccess: false,
      },
    );
    html = result.value;
  } catch (err) {
    throw new ParseError(
      "corrupt",
      `The Word document cannot be read (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  return markdownConverter().turndown(html);
}
