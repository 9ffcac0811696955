import fc from "fast-check";
import { htmlPage, prose, type Site, startSite } from "../support/sites.js";

/**
 * Algorithmic attacks: inputs within every documented size limit whose cost grows faster than
 * their size in a careless implementation. Deep nesting, long repetition, patterns that
 * backtrack, huge token counts, Unicode that expands or never ends a grapheme. Each attack is a
 * builder and the sizes it is tried at, so one attack can be a field of a body, a file, or a page
 * of the hostile site, and a report shows its name and size (`shapeOf`) instead of a megabyte.
 */

interface Attack {
  build(size: number): string;
  sizes: number[];
}

/** Four-letter stems: every word of the seeded vocabulary starts with one, and floods repeat them. */
export const STEMS = ["zorb", "quix", "vemp", "glar"];

const letters = "abcdefghijklmnopqrstuvwxyz";

/** The `i`th three-letter suffix. */
const suffix = (i: number) =>
  `${letters[Math.floor(i / 676) % 26]}${letters[Math.floor(i / 26) % 26]}${letters[i % 26]}`;

/**
 * About `bytes` of sentences of distinct words, each a stem and a suffix: a knowledge base where
 * one four-letter query term expands to thousands of terms, each in many chunks.
 */
export function vocabulary(bytes: number): string {
  const words: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes - 20; i++) {
    const word = `${STEMS[i % STEMS.length]}${suffix(Math.floor(i / STEMS.length))}`;
    const end = i % 12 === 11 ? ". " : " ";
    words.push(word, end);
    length += word.length + end.length;
  }
  return `${words.join("").trim()}.`;
}

const words = (n: number) => Array.from({ length: n }, (_, i) => STEMS[i % STEMS.length]).join(" ");

/** Texts: for text sources, files, queries and every field of free text (cut to its limit). */
export const TEXT_ATTACKS = {
  // A heading line that never ends as a heading: quadratic in a backtracking heading pattern.
  "heading-of-hashes": { build: (n) => `# a${"#".repeat(n)}b`, sizes: [10_000, 100_000] },
  "lines-of-hashes": { build: (n) => `# a${"#".repeat(2000)}b\n`.repeat(n), sizes: [50, 450] },
  "one-character": { build: (n) => "a".repeat(n), sizes: [100_000, 999_000] },
  whitespace: { build: (n) => `x${" \t".repeat(n)}x`, sizes: [100_000, 450_000] },
  "blank-lines": { build: (n) => `x${" \n".repeat(n)}x`, sizes: [100_000, 450_000] },
  // Many sentences in one paragraph, in a spaced and an unspaced script.
  sentences: { build: (n) => "Aa. ".repeat(n), sizes: [10_000, 240_000] },
  "unspaced-sentences": { build: (n) => "日本語の文です。".repeat(n), sizes: [5_000, 40_000] },
  dots: { build: (n) => ".".repeat(n), sizes: [100_000, 999_000] },
  "nested-markup": {
    build: (n) => `${"<div>".repeat(n)}x${"</div>".repeat(n)}`,
    sizes: [5_000, 80_000],
  },
  "nested-json": { build: (n) => `${"[".repeat(n)}${"]".repeat(n)}`, sizes: [100_000, 490_000] },
  // Huge token counts: a query of 400 four-letter terms, or an index of 190,000.
  "word-flood": { build: words, sizes: [400, 190_000] },
  "one-word-flood": { build: (n) => `${STEMS[0]} `.repeat(n).trim(), sizes: [400, 190_000] },
  vocabulary: { build: vocabulary, sizes: [990_000] },
  // One grapheme that never ends.
  "combining-marks": { build: (n) => `a${"\u0301".repeat(n)}`, sizes: [100_000, 490_000] },
  "joined-emoji": { build: (n) => `👩${"\u200d👩".repeat(n)}`, sizes: [10_000, 140_000] },
  // Characters that grow when upper-cased (ΐ, ß) or normalised (U+FB2C under NFC, U+FDFA under NFKD).
  "expanding-case": { build: (n) => "\u0390\u00df".repeat(n), sizes: [100_000, 240_000] },
  "expanding-normalization": {
    build: (n) => "\ufb2c\ufdfa".repeat(n),
    sizes: [100_000, 160_000],
  },
  "bidi-controls": { build: (n) => "\u202e\u2066a".repeat(n), sizes: [100_000, 140_000] },
  "lone-surrogates": { build: (n) => "\ud800".repeat(n), sizes: [100_000, 300_000] },
  entities: { build: (n) => "&amp;".repeat(n), sizes: [100_000, 190_000] },
  "markdown-emphasis": { build: (n) => "*_`[".repeat(n), sizes: [100_000, 240_000] },
} satisfies Record<string, Attack>;

/** CSV files: a row of many fields, an unterminated quote, many rows. */
const CSV_ATTACKS = {
  "wide-row": { build: (n) => `${"a,".repeat(n)}a\n`, sizes: [100_000, 1_500_000] },
  "open-quote": { build: (n) => `a,"${'""'.repeat(n)}\n`, sizes: [100_000, 1_500_000] },
  "many-rows": { build: (n) => "a,b\n".repeat(n), sizes: [100_000, 900_000] },
} satisfies Record<string, Attack>;

/** `n` elements opened, content, and closed again. */
const nested = (open: string, close: string, n: number) =>
  htmlPage("Nested", `${open.repeat(n)}${prose("Nested")}${close.repeat(n)}`);

/** HTML pages: served by the hostile site, uploaded as files. */
export const PAGE_ATTACKS = {
  "nested-divs": { build: (n) => nested("<div>", "</div>", n), sizes: [1_000, 5_000, 20_000] },
  "nested-tables": {
    build: (n) => nested("<table><tr><td>", "</td></tr></table>", n),
    sizes: [1_000, 5_000],
  },
  "nested-lists": { build: (n) => nested("<ul><li>", "</li></ul>", n), sizes: [5_000] },
  // Misnested formatting: the parser's adoption agency runs for every closing tag.
  "misnested-formatting": { build: (n) => nested("<b><i>", "</b></i>", n), sizes: [1_000, 5_000] },
  "nested-anchors": { build: (n) => nested('<a href="#">', "", n), sizes: [5_000] },
  // Fifty links below the page, each a path of `n` characters: work for crawl path patterns.
  "long-links": {
    build: (n) =>
      htmlPage(
        "Links",
        `${prose("Links")}${Array.from({ length: 50 }, (_, i) => `<a href="${"a".repeat(n)}${i}">${i}</a>`).join("")}`,
      ),
    sizes: [42, 200, 1_000],
  },
  "many-links": {
    build: (n) =>
      htmlPage(
        "Links",
        `${prose("Links")}${Array.from({ length: n }, (_, i) => `<a href="l${i}">l</a>`).join("")}`,
      ),
    sizes: [5_000, 30_000],
  },
  wide: {
    build: (n) => htmlPage("Wide", `${prose("Wide")}${"<p>w</p>".repeat(n)}`),
    sizes: [50_000],
  },
  "heading-of-hashes": {
    build: (n) => htmlPage("Hashes", `<h1>a${"#".repeat(n)}b</h1>${prose("Hashes")}`),
    sizes: [10_000, 100_000],
  },
  "long-attribute": {
    build: (n) =>
      htmlPage("Attribute", `<div class="${"a ".repeat(n)}">${prose("Attribute")}</div>`),
    sizes: [450_000],
  },
} satisfies Record<string, Attack>;

type Attacks = Record<string, Attack>;

/** Every attack of a family at every size. */
const instances = (attacks: Attacks) =>
  Object.entries(attacks).flatMap(([name, attack]) =>
    attack.sizes.map((size) => ({ name, size, build: () => attack.build(size) })),
  );

const pick = (attacks: Attacks) => fc.constantFrom(...instances(attacks));

/** A text attack, any of them at any of its sizes. */
export const attackText: fc.Arbitrary<string> = pick(TEXT_ATTACKS).map((a) => a.build());

/** Queries and messages that flood search with terms, or any other text attack. */
export const queryFlood: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("word-flood", "one-word-flood").map((name) => TEXT_ATTACKS[name].build(400)),
  attackText,
);

/** Crawl path patterns with a star before each of many characters, and the odd ordinary one. */
export const crawlPatterns: fc.Arbitrary<string[]> = fc.array(
  fc.oneof(
    fc.constantFrom(8, 16, 40, 98).map((stars) => `/${"*a".repeat(stars)}*b`),
    fc.constantFrom(16, 99).map((stars) => `/page/${"*".repeat(stars)}b`),
    fc.constantFrom(20, 60).map((stars) => `${"/*".repeat(stars)}/b`),
    fc.constantFrom("/page/*", "/*", "/page/long-links/*/a*a*a*a*a*a*a*a*a*a*a*a*b"),
  ),
  { maxLength: 20 },
);

/** A file for `POST /api/knowledge`: pages as HTML, texts as Markdown or plain text, CSV. */
export interface AttackFile {
  filename: string;
  type: string;
  bytes: Uint8Array;
}

const encode = (text: string) => new TextEncoder().encode(text);

export const attackFile: fc.Arbitrary<AttackFile> = fc
  .oneof(
    pick(PAGE_ATTACKS).map((a) => ({ filename: `${a.name}.html`, type: "text/html", text: a })),
    pick(TEXT_ATTACKS).chain((a) =>
      fc.constantFrom(
        { filename: `${a.name}.md`, type: "text/markdown", text: a },
        { filename: `${a.name}.txt`, type: "text/plain", text: a },
      ),
    ),
    pick(CSV_ATTACKS).map((a) => ({ filename: `${a.name}.csv`, type: "text/csv", text: a })),
  )
  .map(({ filename, type, text }) => ({ filename, type, bytes: encode(text.build()) }));

/** The hostile site's paths: `/page/{name}/{size}/` an HTML attack, `/text/{name}/{size}` a text one. */
export const attackPaths = {
  pages: instances(PAGE_ATTACKS).map((a) => `/page/${a.name}/${a.size}/`),
  texts: instances(TEXT_ATTACKS).map((a) => `/text/${a.name}/${a.size}`),
};

/**
 * A site on 127.0.0.1 serving every page attack as HTML and every text attack as Markdown, at
 * `attackPaths`. Links on its pages lead nowhere (404), so a crawl of it stays small.
 */
export async function startHostileSite(): Promise<Site> {
  const site = await startSite();
  const serve = (path: string, type: string, build: () => string) =>
    site.route(path, (_req, res) => {
      res.writeHead(200, { "content-type": `${type}; charset=utf-8` }).end(build());
    });
  for (const a of instances(PAGE_ATTACKS))
    serve(`/page/${a.name}/${a.size}/`, "text/html", a.build);
  for (const a of instances(TEXT_ATTACKS))
    serve(`/text/${a.name}/${a.size}`, "text/markdown", a.build);
  return site;
}
