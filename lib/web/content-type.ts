/**
 * The kinds of content the service fetches: web pages, feeds and sitemaps, JSON (job boards), and
 * the document types a knowledge source can hold. Anything else is refused before its body is read.
 */
export type ContentKind =
  | "html"
  | "xhtml"
  | "text"
  | "xml"
  | "json"
  | "pdf"
  | "docx"
  | "markdown"
  | "csv";

const KINDS: Record<string, ContentKind> = {
  "text/html": "html",
  "application/xhtml+xml": "xhtml",
  "text/plain": "text",
  "application/xml": "xml",
  "text/xml": "xml",
  "application/rss+xml": "xml",
  "application/atom+xml": "xml",
  "application/json": "json",
  "application/pdf": "pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "text/markdown": "markdown",
  "text/x-markdown": "markdown",
  "text/csv": "csv",
};

export const ALL_KINDS: readonly ContentKind[] = [...new Set(Object.values(KINDS))];

/** Web pages a crawl or a URL source reads. */
export const PAGE_KINDS: readonly ContentKind[] = ["html", "xhtml"];

export interface ContentType {
  /** The media type, lowercase and without parameters (`text/html`). */
  mime: string;
  charset: string | undefined;
}

export function parseContentType(header: string | undefined): ContentType {
  const [mime = "", ...params] = (header ?? "").split(";");
  const charset = params
    .map((p) => p.trim().match(/^charset\s*=\s*"?([^";\s]+)"?$/i)?.[1])
    .find((c) => c !== undefined);
  return { mime: mime.trim().toLowerCase(), charset: charset?.toLowerCase() };
}

/** A `Content-Type` header again from its parts, as a fetched page is handed on with them. */
export const contentTypeHeader = ({
  mime,
  charset,
}: {
  mime: string;
  charset?: string | undefined;
}) => (charset ? `${mime}; charset=${charset}` : mime);

export function contentKind(mime: string): ContentKind | undefined {
  return KINDS[mime];
}

/** The Accept header for a set of kinds: those media types first, anything else last. */
export function acceptHeader(kinds: readonly ContentKind[]): string {
  const types = Object.entries(KINDS)
    .filter(([, kind]) => kinds.includes(kind))
    .map(([mime]) => mime);
  return [...types, "*/*;q=0.1"].join(", ");
}

/** A body as text in its declared charset; unknown labels fall back to UTF-8. */
export function decodeText(body: Uint8Array, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? "utf-8").decode(body);
  } catch {
    return new TextDecoder().decode(body);
  }
}
