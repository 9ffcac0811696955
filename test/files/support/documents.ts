import {
  Document,
  HeadingLevel,
  Packer,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
} from "docx";
import { PDFDocument, PDFHexString, rgb, StandardFonts } from "pdf-lib";
import { zip } from "./zip.js";

/** Real documents made by the tests, as the libraries users' tools are built on write them. */

export interface PdfPage {
  heading?: string;
  lines: string[];
}

/** A PDF whose headings are set in 24 pt and body lines in 12 pt, one text layer per page. */
export async function pdfDocument(pages: PdfPage[]): Promise<PDFDocument> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const { heading, lines } of pages) {
    const page = doc.addPage();
    let y = 760;
    if (heading) {
      page.drawText(heading, { x: 50, y, size: 24, font });
      y -= 40;
    }
    for (const line of lines) {
      page.drawText(line, { x: 50, y, size: 12, font });
      y -= 18;
    }
  }
  return doc;
}

export async function pdfBytes(pages: PdfPage[]): Promise<Uint8Array> {
  return (await pdfDocument(pages)).save();
}

/** A PDF needing a user password: its /Encrypt entry's U value matches no empty password. */
export async function encryptedPdf(): Promise<Uint8Array> {
  const doc = await pdfDocument([{ lines: ["Secret numbers"] }]);
  const { context } = doc;
  context.trailerInfo.Encrypt = context.register(
    context.obj({
      Filter: "Standard",
      V: 1,
      R: 2,
      O: PDFHexString.of("a1".repeat(32)),
      U: PDFHexString.of("b2".repeat(32)),
      P: -44,
    }),
  );
  const id = PDFHexString.of("0123456789abcdef0123456789abcdef");
  context.trailerInfo.ID = context.obj([id, id]);
  return doc.save({ useObjectStreams: false });
}

/** A "scanned" PDF: shapes only, no text layer. */
export async function imageOnlyPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < 2; i++) {
    doc
      .addPage()
      .drawRectangle({ x: 40, y: 40, width: 300, height: 400, color: rgb(0.2, 0.2, 0.2) });
  }
  return doc.save();
}

/** A Word document with a title, two heading levels, body text and a table with a header row. */
export async function docxBytes(): Promise<Uint8Array> {
  const cell = (text: string) => new TableCell({ children: [new Paragraph(text)] });
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: "Product Handbook", heading: HeadingLevel.HEADING_1 }),
          new Paragraph({
            children: [
              new TextRun("Our onboarding takes "),
              new TextRun({ text: "three days", bold: true }),
              new TextRun(" for every new customer."),
            ],
          }),
          new Paragraph({ text: "Leadership", heading: HeadingLevel.HEADING_2 }),
          new Paragraph("The team behind the product:"),
          new Table({
            rows: [
              new TableRow({ tableHeader: true, children: [cell("Name"), cell("Role")] }),
              new TableRow({ children: [cell("Ada Lovelace"), cell("CTO")] }),
              new TableRow({ children: [cell("Grace Hopper"), cell("VP Engineering")] }),
            ],
          }),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

const MINIMAL_DOCUMENT = Buffer.from(
  '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Hi</w:t></w:r></w:p></w:body></w:document>',
);

/**
 * A DOCX-shaped zip bomb: a real document part, then 30 parts of 10 MB of zeros each (10 KB
 * compressed), honestly declared: 300 MB unpacked.
 */
export function zipBomb(): Buffer {
  const zeros = new Uint8Array(10 * 1024 * 1024);
  return zip([
    { name: "word/document.xml", data: MINIMAL_DOCUMENT },
    ...Array.from({ length: 30 }, (_, i) => ({ name: `word/media/pad${i}.bin`, data: zeros })),
  ]);
}

/** A zip bomb that lies: its document part claims 1 KB and inflates to 64 MB. */
export function lyingZipBomb(): Buffer {
  return zip([
    { name: "word/document.xml", data: new Uint8Array(64 * 1024 * 1024), declaredSize: 1024 },
  ]);
}

/** A ZIP that is not a Word document (a renamed archive). */
export function plainZip(): Buffer {
  return zip([{ name: "notes/readme.txt", data: Buffer.from("hello") }]);
}
