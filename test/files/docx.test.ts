import { describe, expect, it } from "vitest";
import { docxText } from "../../lib/files/docx.js";
import { verifyZip } from "../../lib/files/zip.js";
import { docxBytes, lyingZipBomb } from "./support/documents.js";

const limits = { maxZipEntries: 100, maxUnzippedBytes: 16 * 1024 * 1024 };

describe("DOCX text", () => {
  it("keeps headings as Markdown and turns a table into records", async () => {
    const text = await docxText(await docxBytes(), limits);
    expect(text).toBe(
      [
        "# Product Handbook",
        "Our onboarding takes three days for every new customer.",
        "## Leadership",
        "The team behind the product:",
        "Name: Ada Lovelace; Role: CTO",
        "Name: Grace Hopper; Role: VP Engineering",
      ].join("\n\n"),
    );
  });

  it("stops a part that inflates beyond its declared size before the document library reads it", async () => {
    await expect(verifyZip(lyingZipBomb(), limits)).rejects.toMatchObject({
      code: "too_large",
      message: expect.stringContaining("declared size"),
    });
  });

  it("stops when the real unpacked total passes the limit", async () => {
    const bytes = await docxBytes();
    await expect(verifyZip(bytes, { ...limits, maxUnzippedBytes: 100 })).rejects.toMatchObject({
      code: "too_large",
    });
  });
});
