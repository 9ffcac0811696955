import { describe, expect, it } from "vitest";
import { confirmKind } from "../../lib/files/detect.js";
import { DEFAULT_PARSE_LIMITS } from "../../lib/files/limits.js";
import { sniff } from "../../lib/files/sniff.js";
import { docxBytes, pdfBytes, plainZip, zipBomb } from "./support/documents.js";

const OLE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

describe("content sniffing", () => {
  it("knows PDFs, ZIPs, OLE files and text by their bytes", async () => {
    expect(sniff(await pdfBytes([{ lines: ["x"] }]))).toBe("pdf");
    expect(sniff(Buffer.concat([Buffer.from("junk\n\x00\x01"), Buffer.from("%PDF-1.7")]))).toBe(
      "pdf",
    );
    expect(sniff(await docxBytes())).toBe("zip");
    expect(sniff(Buffer.from([...OLE, 0, 0]))).toBe("ole");
    expect(
      sniff(Buffer.concat([Buffer.from(OLE), Buffer.from("EncryptedPackage", "utf16le")])),
    ).toBe("encrypted_office");
    expect(sniff(Buffer.from("Plain words, ünïcödé, 日本語"))).toBe("text");
    expect(sniff(Buffer.from("a README that mentions %PDF-1.7 headers"))).toBe("text");
  });

  it("calls NULs, invalid UTF-8 and control characters binary", () => {
    expect(sniff(Buffer.from("text\x00more"))).toBe("binary");
    expect(sniff(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x6f]))).toBe("binary");
    expect(sniff(Buffer.from("\x01\x02\x03\x04 mostly control"))).toBe("binary");
  });

  it("does not count a character cut by the sample's end against UTF-8 text", () => {
    const text = Buffer.from("é".repeat(40_000));
    expect(sniff(text)).toBe("text");
  });
});

describe("confirming the declared kind", () => {
  const limits = DEFAULT_PARSE_LIMITS;

  it("accepts bytes that match", async () => {
    await expect(confirmKind("docx", await docxBytes(), limits)).resolves.toBeUndefined();
    await expect(confirmKind("csv", Buffer.from("a,b\n1,2"), limits)).resolves.toBeUndefined();
  });

  it("refuses a PDF named .docx and a Word document named .txt", async () => {
    await expect(
      confirmKind("docx", await pdfBytes([{ lines: ["x"] }]), limits),
    ).rejects.toMatchObject({
      code: "type_mismatch",
      message: "The file is declared as a Word document (.docx) but holds a PDF document",
    });
    await expect(confirmKind("text", await docxBytes(), limits)).rejects.toMatchObject({
      code: "type_mismatch",
      message: "The file is declared as a text file but holds a ZIP archive",
    });
  });

  it("refuses a ZIP that is not a Word document, and a password-protected one", async () => {
    await expect(confirmKind("docx", plainZip(), limits)).rejects.toMatchObject({
      code: "type_mismatch",
      message: expect.stringContaining("not a Word document"),
    });
    const protectedDoc = Buffer.concat([
      Buffer.from(OLE),
      Buffer.from("EncryptedPackage", "utf16le"),
    ]);
    await expect(confirmKind("docx", protectedDoc, limits)).rejects.toMatchObject({
      code: "encrypted",
    });
  });

  it("refuses a zip bomb from its central directory alone", async () => {
    await expect(confirmKind("docx", zipBomb(), limits)).rejects.toMatchObject({
      code: "too_large",
      message: "The document expands to more than 256 MB when unpacked",
    });
    await expect(
      confirmKind("docx", zipBomb(), { ...limits, maxZipEntries: 10 }),
    ).rejects.toMatchObject({ code: "too_large", message: expect.stringContaining("31 parts") });
  });

  it("refuses a damaged ZIP", async () => {
    const bytes = await docxBytes();
    await expect(
      confirmKind("docx", bytes.slice(0, bytes.length - 30), limits),
    ).rejects.toMatchObject({
      code: "corrupt",
    });
  });
});
