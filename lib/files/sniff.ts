/**
 * What a file's bytes are, from magic numbers and a look at its start; cheap enough for the
 * calling thread. The declared type (types.ts) must agree with it before any parser runs.
 */

export type ContentFormat =
  | "pdf"
  | "zip"
  /** An OLE compound file: a legacy Office document, or a password-protected modern one. */
  | "ole"
  | "encrypted_office"
  | "text"
  | "binary";

const SAMPLE_BYTES = 64 * 1024;
const PDF_MAGIC = Buffer.from("%PDF-");
const ZIP_MAGIC = [Buffer.from("PK\x03\x04"), Buffer.from("PK\x05\x06")];
const OLE_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
/** Office puts an encrypted document in an OLE file holding a stream of this name. */
const ENCRYPTED_PACKAGE = Buffer.from("EncryptedPackage", "utf16le");

export type TextEncoding = "utf-8" | "utf-16le" | "utf-16be";

/** The encoding a byte order mark announces. */
export function byteOrderMark(bytes: Uint8Array): TextEncoding | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8";
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le";
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be";
  return undefined;
}

/** Control characters other than tab, line breaks and form feed. */
const isStrayControl = (byte: number) =>
  (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0c && byte !== 0x0d) ||
  byte === 0x7f;

/** UTF-8 (or BOM-marked UTF-16) without NULs and with hardly any control characters. */
function looksLikeText(bytes: Uint8Array): boolean {
  if (byteOrderMark(bytes)) return true;
  const sample = bytes.subarray(0, SAMPLE_BYTES);
  if (sample.includes(0)) return false;
  try {
    // `stream` tolerates a character cut at the end of the sample.
    new TextDecoder("utf-8", { fatal: true }).decode(sample, { stream: true });
  } catch {
    return false;
  }
  let controls = 0;
  for (const byte of sample) if (isStrayControl(byte)) controls++;
  return controls <= sample.length / 100;
}

export function sniff(bytes: Uint8Array): ContentFormat {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024));
  if (head.subarray(0, PDF_MAGIC.length).equals(PDF_MAGIC)) return "pdf";
  if (ZIP_MAGIC.some((magic) => head.subarray(0, 4).equals(magic))) return "zip";
  if (head.subarray(0, 8).equals(OLE_MAGIC)) {
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(ENCRYPTED_PACKAGE)
      ? "encrypted_office"
      : "ole";
  }
  if (looksLikeText(bytes)) return "text";
  // PDF readers accept junk before the header, within the first KB.
  return head.includes(PDF_MAGIC) ? "pdf" : "binary";
}

export const FORMAT_NAMES: Record<ContentFormat, string> = {
  pdf: "a PDF document",
  zip: "a ZIP archive",
  ole: "a legacy Office document",
  encrypted_office: "a password-protected Office document",
  text: "text",
  binary: "binary data",
};
