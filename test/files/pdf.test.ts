import { describe, expect, it } from "vitest";
import { pdfText } from "../../lib/files/pdf.js";
import { encryptedPdf, imageOnlyPdf, pdfBytes } from "./support/documents.js";

const limits = { maxPages: 50 };

describe("PDF text", () => {
  it("keeps pages apart with form feeds and marks large lines as headings", async () => {
    const bytes = await pdfBytes([
      { heading: "Pricing Overview", lines: ["The starter plan costs 10 euros.", "# a hash"] },
      { lines: ["Enterprise plans include single sign-on."] },
    ]);
    expect(await pdfText(bytes, limits)).toBe(
      "# Pricing Overview\nThe starter plan costs 10 euros.\n\\# a hash\fEnterprise plans include single sign-on.",
    );
  });

  it("keeps the place of a page without text, so later page numbers stay right", async () => {
    const bytes = await pdfBytes([{ lines: ["one"] }, { lines: [] }, { lines: ["three"] }]);
    expect((await pdfText(bytes, limits)).split("\f")).toEqual(["one", "", "three"]);
  });

  it("refuses a password-protected PDF", async () => {
    await expect(pdfText(await encryptedPdf(), limits)).rejects.toMatchObject({
      code: "encrypted",
      message: expect.stringContaining("password"),
    });
  });

  it("refuses a PDF without a text layer", async () => {
    await expect(pdfText(await imageOnlyPdf(), limits)).rejects.toMatchObject({
      code: "no_text_layer",
      message: expect.stringContaining("OCR"),
    });
  });

  it("refuses a truncated PDF", async () => {
    const bytes = await pdfBytes([{ lines: ["cut short"] }]);
    await expect(pdfText(bytes.slice(0, bytes.length / 2), limits)).rejects.toMatchObject({
      code: "corrupt",
    });
  });

  it("refuses more pages than the limit", async () => {
    const bytes = await pdfBytes(Array.from({ length: 3 }, () => ({ lines: ["page"] })));
    await expect(pdfText(bytes, { maxPages: 2 })).rejects.toMatchObject({ code: "too_large" });
  });
});
