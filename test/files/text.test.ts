import { describe, expect, it } from "vitest";
import { ParseError } from "../../lib/files/errors.js";
import { decodeText, finishText, markdownText, plainText } from "../../lib/files/text.js";

const utf16 = (text: string, endian: "le" | "be") => {
  const le = Buffer.from(text, "utf16le");
  const body = endian === "le" ? le : Buffer.from(le).swap16();
  return Buffer.concat([Buffer.from(endian === "le" ? [0xff, 0xfe] : [0xfe, 0xff]), body]);
};

describe("decoding text", () => {
  it("reads UTF-8 with and without a byte order mark", () => {
    expect(decodeText(Buffer.from("Grüße, 世界"))).toBe("Grüße, 世界");
    expect(decodeText(Buffer.from("\uFEFFÜber"))).toBe("Über");
  });

  it("reads UTF-16 in both byte orders when a byte order mark says so", () => {
    expect(decodeText(utf16("Καλημέρα κόσμε", "le"))).toBe("Καλημέρα κόσμε");
    expect(decodeText(utf16("こんにちは", "be"))).toBe("こんにちは");
  });

  it("refuses bytes that are not valid UTF-8", () => {
    expect(() => decodeText(Buffer.from([0x63, 0x61, 0x66, 0xe9]))).toThrow(
      expect.objectContaining({ code: "type_mismatch", message: expect.stringContaining("UTF-8") }),
    );
  });
});

describe("plain text", () => {
  it("keeps lines that start with # as text and turns form feeds into line breaks", () => {
    expect(plainText("# not a heading\nline\fnext")).toBe("\\# not a heading\nline\nnext");
  });
});

describe("Markdown", () => {
  it("keeps ATX headings and makes setext headings ATX", () => {
    const md = "Title\n=====\n\nIntro text.\n\nUsage\n-----\nRun it.\n\n## Details\nMore.";
    expect(markdownText(md)).toBe(
      "# Title\n\nIntro text.\n\n## Usage\nRun it.\n\n## Details\nMore.",
    );
  });

  it("does not read comments in code fences as headings", () => {
    const md = "# Install\n```bash\n# fetch the code\ngit clone x\n```\nDone.";
    expect(markdownText(md)).toBe(
      "# Install\n```bash\n\\# fetch the code\ngit clone x\n```\nDone.",
    );
  });

  it("reads Windows line ends", () => {
    expect(markdownText("Title\r\n===\r\nBody")).toBe("# Title\nBody");
  });

  it("leaves front matter, lists and thematic breaks alone", () => {
    const md = "---\ntitle: Guide\n---\n- item\n---\n\n---\ntext";
    expect(markdownText(md)).toBe(md);
  });
});

describe("finished text", () => {
  it("refuses blank text and text over the limit", () => {
    expect(() => finishText(" \n\f\n ", { maxTextChars: 10 })).toThrow(ParseError);
    expect(() => finishText(" \n\f\n ", { maxTextChars: 10 })).toThrow(
      expect.objectContaining({ code: "empty" }),
    );
    expect(() => finishText("x".repeat(11), { maxTextChars: 10 })).toThrow(
      expect.objectContaining({ code: "too_large" }),
    );
    expect(finishText("fine", { maxTextChars: 10 })).toBe("fine");
  });
});
