/**
 * The file types a knowledge source can be made from, by declared content type and extension.
 * The API answers 415 for anything else before storing a byte; the parser later checks that the
 * bytes agree (see detect.ts).
 */

export type FileKind = "pdf" | "docx" | "html" | "markdown" | "text" | "csv";

interface FileType {
  kind: FileKind;
  /** The type stored with the object and signed into upload policies. */
  contentType: string;
  /** Other content types clients send for it. */
  aliases: string[];
  extensions: string[];
}

const FILE_TYPES: FileType[] = [
  {
    kind: "pdf",
    contentType: "application/pdf",
    aliases: ["application/x-pdf"],
    extensions: [".pdf"],
  },
  {
    kind: "docx",
    contentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    aliases: [],
    extensions: [".docx"],
  },
  {
    kind: "html",
    contentType: "text/html",
    aliases: ["application/xhtml+xml"],
    extensions: [".html", ".htm", ".xhtml"],
  },
  {
    kind: "markdown",
    contentType: "text/markdown",
    aliases: ["text/x-markdown"],
    extensions: [".md", ".markdown"],
  },
  { kind: "text", contentType: "text/plain", aliases: [], extensions: [".txt", ".text"] },
  {
    kind: "csv",
    contentType: "text/csv",
    aliases: ["application/csv", "text/comma-separated-values"],
    extensions: [".csv"],
  },
];

/** Content types the API accepts (the canonical one of each kind, then aliases). */
export const ACCEPTED_CONTENT_TYPES: readonly string[] = FILE_TYPES.flatMap((t) => [
  t.contentType,
  ...t.aliases,
]);

/** File name extensions the API accepts, with the leading dot. */
export const ACCEPTED_EXTENSIONS: readonly string[] = FILE_TYPES.flatMap((t) => t.extensions);

/** Types that say nothing about the content: the extension decides. */
const GENERIC_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream"]);

/** Kinds stored as text (as opposed to a binary container). */
const isTextKind = (kind: FileKind) => kind !== "pdf" && kind !== "docx";

/** The media type without parameters, lower case (`Text/CSV; charset=utf-8` -> `text/csv`). */
export function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
}

export function extensionOf(filename: string): string {
  const base = filename.slice(Math.max(filename.lastIndexOf("/"), filename.lastIndexOf("\\")) + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot).toLowerCase() : "";
}

export type Declared =
  | { ok: true; kind: FileKind; contentType: string }
  | { ok: false; reason: "unsupported" | "conflict"; message: string };

/**
 * What a file claims to be, from its content type and name. A generic content type defers to
 * the extension; `text/plain` fits any text kind (browsers send it for .md and .csv); otherwise
 * the two must agree.
 */
export function declaredType(filename: string, contentType?: string | null): Declared {
  const type = mediaType(contentType);
  const extension = extensionOf(filename);
  const byExtension = FILE_TYPES.find((t) => t.extensions.includes(extension));
  const byType = GENERIC_TYPES.has(type)
    ? undefined
    : FILE_TYPES.find((t) => t.contentType === type || t.aliases.includes(type));
  if (!GENERIC_TYPES.has(type) && !byType) {
    return { ok: false, reason: "unsupported", message: `Files of type ${type} are not supported` };
  }
  const plainTextOfTextKind =
    byType?.kind === "text" && byExtension && isTextKind(byExtension.kind);
  const chosen = plainTextOfTextKind ? byExtension : (byType ?? byExtension);
  if (!chosen) {
    return {
      ok: false,
      reason: "unsupported",
      message: extension
        ? `Files with the extension ${extension} are not supported`
        : "The file has neither a supported content type nor a supported extension",
    };
  }
  if (byType && byExtension && chosen.kind !== byExtension.kind) {
    return {
      ok: false,
      reason: "conflict",
      message: `The content type ${type} does not match the extension ${extension}`,
    };
  }
  return { ok: true, kind: chosen.kind, contentType: chosen.contentType };
}
