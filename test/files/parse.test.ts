import { describe, expect, it } from "vitest";
import { MemoryBudget } from "../../lib/files/budget.js";
import { ParseError } from "../../lib/files/errors.js";
import { type FileInput, type ParseOptions, parseFile } from "../../lib/files/parse.js";
import { Sandbox } from "../../lib/files/sandbox.js";
import { endlessSandbox, NEVER_ENDS } from "../support/endless.js";
import { docxBytes, encryptedPdf, lyingZipBomb, pdfBytes, zipBomb } from "./support/documents.js";

/**
 * parseFile end to end: the checks in the calling thread, then the real parser thread
 * (dev-worker.mjs + tsx here, as under `npm start`).
 */

const parse = (filename: string, bytes: Uint8Array | string, options?: ParseOptions) =>
  parseFile(
    { filename, bytes: typeof bytes === "string" ? Buffer.from(bytes) : bytes } satisfies FileInput,
    options,
  );

describe("parsing files in the parser thread", () => {
  it("reads a PDF page by page with its heading", async () => {
    const bytes = await pdfBytes([
      { heading: "Pricing", lines: ["Starter costs 10 euros a month."] },
      { lines: ["Enterprise includes single sign-on."] },
    ]);
    expect(await parse("pricing.pdf", bytes)).toEqual({
      kind: "pdf",
      text: "# Pricing\nStarter costs 10 euros a month.\fEnterprise includes single sign-on.",
    });
  });

  it("reads a Word document with headings and a table", async () => {
    const { kind, text } = await parse("handbook.docx", await docxBytes());
    expect(kind).toBe("docx");
    expect(text).toContain("## Leadership");
    expect(text).toContain("Name: Grace Hopper; Role: VP Engineering");
  });

  it("reads CSV, Markdown and non-Latin UTF-8 text", async () => {
    expect(await parse("team.csv", "Name,Role\nAda,CTO\n")).toEqual({
      kind: "csv",
      text: "Name: Ada; Role: CTO",
    });
    expect((await parse("guide.md", "Setup\n=====\nRun it.")).text).toBe("# Setup\nRun it.");
    expect(await parse("заметки.txt", "Привет, мир. 你好，世界。")).toEqual({
      kind: "text",
      text: "Привет, мир. 你好，世界。",
    });
  });

  it("hands HTML to the injected extractor", async () => {
    const extractHtml = (html: string) => ({ text: html.replace(/<[^>]+>/g, " ").trim() });
    expect(await parse("page.html", "<h1>Hello</h1>", { extractHtml })).toEqual({
      kind: "html",
      text: "Hello",
    });
    await expect(parse("page.html", "<p>x</p>")).rejects.toMatchObject({
      code: "unsupported_type",
    });
    await expect(
      parse("page.html", "<p>xxxxxxxx</p>", { extractHtml, limits: { maxHtmlBytes: 4 } }),
    ).rejects.toMatchObject({ code: "too_large" });
    const refusing = () => {
      throw new ParseError("too_complex", "The page has more than 60000 elements");
    };
    await expect(parse("page.html", "<p>x</p>", { extractHtml: refusing })).rejects.toMatchObject({
      code: "too_complex",
      message: "The page has more than 60000 elements",
    });
    // Anything else is an outage (a busy sandbox, a crashed thread): retried, not the file's fault.
    const failing = () => {
      throw new Error("No memory for a sandbox thread within 10 seconds");
    };
    const outage = parse("page.html", "<p>x</p>", { extractHtml: failing });
    await expect(outage).rejects.toThrow("No memory for a sandbox thread");
    await expect(outage).rejects.not.toBeInstanceOf(ParseError);
  });

  it("carries a parser's ParseError across the thread boundary", async () => {
    await expect(parse("secret.pdf", await encryptedPdf())).rejects.toMatchObject({
      name: "ParseError",
      code: "encrypted",
    });
    await expect(parse("blank.md", "\n\n   \n")).rejects.toMatchObject({ code: "empty" });
  });
});

describe("hostile and unusable files", () => {
  it("refuses an empty file and one over the size limit before parsing", async () => {
    await expect(parse("empty.pdf", "")).rejects.toMatchObject({
      code: "empty",
      message: "The file is empty",
    });
    await expect(parse("big.txt", "0123456789", { limits: { maxBytes: 8 } })).rejects.toMatchObject(
      { code: "too_large" },
    );
  });

  it("refuses unsupported types and bytes that contradict the extension", async () => {
    await expect(parse("photo.png", "not really")).rejects.toMatchObject({
      code: "unsupported_type",
    });
    await expect(parse("report.docx", await pdfBytes([{ lines: ["x"] }]))).rejects.toMatchObject({
      code: "type_mismatch",
    });
    await expect(parse("notes.txt", Buffer.from([0, 1, 2, 3, 255]))).rejects.toMatchObject({
      code: "type_mismatch",
    });
  });

  it("refuses zip bombs, honest and lying", async () => {
    await expect(parse("bomb.docx", zipBomb())).rejects.toMatchObject({ code: "too_large" });
    await expect(parse("liar.docx", lyingZipBomb())).rejects.toMatchObject({ code: "too_large" });
  });

  it("ends a parse that outlives its deadline, and the next parse works", async () => {
    // A file no thread ever finishes parsing (test/support/endless.ts), on a fast machine or a
    // loaded one: only the deadline ends it, and the same sandbox parses the next file.
    const sandbox = endlessSandbox(new MemoryBudget(1024));
    const endless = `# Endless\n\n${NEVER_ENDS}`;
    await expect(
      parse("endless.md", endless, { sandbox, limits: { timeoutMs: 300 } }),
    ).rejects.toMatchObject({ code: "timeout", message: "Parsing took longer than 0.3 seconds" });
    const bytes = await pdfBytes([{ lines: ["fine"] }]);
    expect((await parse("fine.pdf", bytes, { sandbox })).text).toBe("fine");
  });

  it("ends a parse that runs out of memory, and the next parse works", async () => {
    const huge = Buffer.from("lorem ipsum dolor sit amet\n".repeat(1_500_000));
    await expect(
      parse("huge.md", huge, { limits: { maxHeapMb: 32, maxTextChars: 100_000_000 } }),
    ).rejects.toMatchObject({ code: "too_large", message: expect.stringContaining("memory") });
    expect((await parse("small.md", "# Still here")).text).toBe("# Still here");
  });

  it("parses files side by side, each in its own thread", async () => {
    const texts = ["alpha", "beta", "gamma"];
    const parsed = await Promise.all(texts.map((text) => parse(`${text}.txt`, text)));
    expect(parsed.map((p) => p.text)).toEqual(texts);
  });

  it("rejects with the thread's own error when it fails for another reason than the file", async () => {
    const broken = new URL("data:text/javascript,throw new Error('parser bundle missing')");
    const sandbox = new Sandbox(new MemoryBudget(1024), { url: broken });
    const failure = parse("fine.txt", "fine", { sandbox });
    await expect(failure).rejects.toThrow("parser bundle missing");
    await expect(failure).rejects.not.toBeInstanceOf(ParseError);
  });
});
