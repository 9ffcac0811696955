import { describe, expect, it } from "vitest";
import { chunkText, normalizeText, PAGE_BREAK } from "../../lib/knowledge/indexing/chunking.js";
import { tokenize } from "../../lib/search/index.js";
import { regexWork } from "../support/regex-work.js";

const sentence = (i: number) => `Sentence number ${i} talks about product marketing.`;

describe("normalizeText", () => {
  it("unifies line ends, drops control characters and collapses blank lines", () => {
    expect(normalizeText("a\r\nb\u0007c\u200B\n\n\n\nd  \t e")).toBe("a\nbc\n\nd e");
  });
});

describe("chunkText", () => {
  it("keeps short paragraphs of one section together", () => {
    const chunks = chunkText("First paragraph.\n\nSecond paragraph.", { size: 200, overlap: 0 });
    expect(chunks).toEqual([
      { index: 0, text: "First paragraph.\n\nSecond paragraph.", heading: null, start: 0, end: 35 },
    ]);
  });

  it("never crosses a heading and records the heading trail", () => {
    const text = "# Product\nIntro.\n## Pricing\nPro costs $49.\n## Team\nTwelve people.";
    const chunks = chunkText(text, { size: 500, overlap: 0 });
    expect(chunks.map((c) => [c.heading, c.text])).toEqual([
      ["Product", "Intro."],
      ["Product > Pricing", "Pro costs $49."],
      ["Product > Team", "Twelve people."],
    ]);
  });

  it("reads ATX headings: one to six #, a space, the text, an optional closing run", () => {
    const headings = (text: string) =>
      chunkText(`${text}\n\nBody.`, { size: 500, overlap: 0 }).map((c) => c.heading);
    expect(headings("## Pricing ##")).toEqual(["Pricing"]);
    expect(headings("###### Six")).toEqual(["Six"]);
    expect(headings("####### Seven")).toEqual([null]);
    expect(headings("#NoSpace")).toEqual([null]);
    expect(headings("# C# tips")).toEqual(["C# tips"]);
    expect(headings("# a#b #")).toEqual(["a#b"]);
    expect(headings("# ###")).toEqual(["#"]);
    expect(headings("# #")).toEqual(["#"]);
  });

  it("reads a heading line of 100,000 # in linear time", () => {
    // The regular expression the hand parser replaced, /^(#{1,6}) +(.+?) *#*$/, took 21 s on this
    // line. The steps of a backtracking search through every expression chunking runs are
    // counted, not timed (test/support/regex-work.ts): linear, they cost the same per character
    // of a line twice as long; quadratic, twice as much (and counting stops past 1,000 per
    // character, where chunking takes 9).
    const line = (n: number) => `# a${"#".repeat(n)}b`;
    const perChar = (n: number) => {
      const chunk = () => chunkText(`${line(n)}\n\nBody.`, { size: 500, overlap: 0 });
      const { steps, over } = regexWork(chunk, 1000 * n);
      expect(over).toBeUndefined();
      return steps / n;
    };
    expect(perChar(20_000)).toBeLessThanOrEqual(1.25 * perChar(10_000));
    const [chunk] = chunkText(`${line(100_000)}\n\nBody.`, { size: 500, overlap: 0 });
    expect(chunk?.heading).toBe(line(100_000).slice(2));
  });

  it("splits long paragraphs at sentence ends and carries whole sentences as overlap", () => {
    const paragraph = Array.from({ length: 20 }, (_, i) => sentence(i)).join(" ");
    const chunks = chunkText(paragraph, { size: 200, overlap: 60 });
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect(chunk.text.length).toBeLessThanOrEqual(200);
      expect(chunk.text).toMatch(/^Sentence number \d+ .*\.$/);
    }
    // The last sentence of a chunk opens the next one.
    const lastOfFirst = chunks[0]?.text.split(". ").at(-1)?.replace(/\.$/, "");
    expect(chunks[1]?.text.startsWith(lastOfFirst ?? "-")).toBe(true);
  });

  it("splits a long paragraph where Unicode's sentence rules split it whole", () => {
    // Each sentence fits a chunk and no two do, so every chunk is one sentence. Abbreviations,
    // decimals and long runs of digits after a period (which the rules look past for a lowercase
    // letter) land on every side of the segmenter's window edges as the opening grows.
    const size = 120;
    const body = [
      "Pro costs 3.5 dollars a month, e.g. for teams of five, and less for a year paid up front.",
      "Sales rose e.g. 12 percent in the U.S. last quarter, the board said in its annual report.",
      "See fig. 3, 4, 5, 6, 7, 8, 9, 10, 11 and 12 for the charts of active users by plan and region.",
      "He said “we ship on Friday.” and then the whole team went back to work on the next release.",
      "Is this really the plan the whole sales team agreed on last Tuesday in the big meeting room?!",
      "当社の製品は中小企業向けの販売管理ツールで、月額料金で提供され、請求書の作成や在庫の管理、顧客情報の共有などを一つの画面で行えるように設計されています。",
      "हमारा उत्पाद छोटे व्यवसायों के लिए बिक्री प्रबंधन का एक सरल साधन है जो मासिक शुल्क पर मिलता है।",
      "هل يعمل هذا المنتج مع الفرق الصغيرة والكبيرة في جميع البلدان التي نبيع فيها منتجاتنا اليوم؟",
      "A line of a list that ends without any terminal punctuation but is long enough to count\n",
    ];
    const segmenter = new Intl.Segmenter("en", { granularity: "sentence" });
    for (let shift = 0; shift < 40; shift++) {
      const opening = `The opening sentence of this paragraph grows by one letter each time: ${"z".repeat(shift)}.`;
      const paragraph = [opening, ...Array.from({ length: 60 }, (_, i) => body[i % body.length])]
        .join(" ")
        .replaceAll("\n ", "\n");
      const whole = [...segmenter.segment(paragraph)].map((s) => s.segment.trim());
      expect(whole.every((s) => s.length > size / 2 && s.length <= size)).toBe(true);
      const chunks = chunkText(paragraph, { size, overlap: 0 });
      expect(chunks.map((c) => c.text)).toEqual(whole);
    }
  });

  it("cuts a sentence without breaks only when it alone exceeds the size", () => {
    const chunks = chunkText("x".repeat(450), { size: 200, overlap: 0 });
    expect(chunks.map((c) => c.text.length)).toEqual([200, 200, 50]);
  });

  it("numbers pages from form feeds", () => {
    const text = `Page one text.${PAGE_BREAK}Page two text.${PAGE_BREAK}${PAGE_BREAK}Page four.`;
    const chunks = chunkText(text, { size: 500, overlap: 0 });
    expect(chunks.map((c) => [c.page, c.text])).toEqual([
      [1, "Page one text."],
      [2, "Page two text."],
      [4, "Page four."],
    ]);
  });

  it("answers nothing for empty text", () => {
    expect(chunkText("  \n\n ", { size: 100, overlap: 10 })).toEqual([]);
  });
});

describe("tokenize", () => {
  const segmenter = new Intl.Segmenter("und", { granularity: "word" });
  const byUnicodeRules = (text: string) =>
    [...segmenter.segment(text)].filter((s) => s.isWordLike).map((s) => s.segment);

  it.each([
    "Hello, world! It's 3.14 dollars, e.g. in the U.S.A.; don't panic",
    "Привет, мир. Ελληνικά test_case foo-bar 2024-01-01",
    "naïve café at 9am: $49/month, l'homme qu'il a vu",
  ])("finds the same words as the Unicode segmenter in %s", (text) => {
    expect(tokenize(text)).toEqual(byUnicodeRules(text));
  });

  it("splits scripts written without spaces into words", () => {
    expect(tokenize("我们的产品价格")).toEqual(byUnicodeRules("我们的产品价格"));
    expect(tokenize("我们的产品价格").length).toBeGreaterThan(1);
  });
});
