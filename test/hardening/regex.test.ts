/**
 * Every regular expression that meets untrusted text (pages, feeds, files, URLs, queries, model
 * output) runs in linear time, or on input bounded before it runs. Each function below gets a text
 * shaped like the worst case for its expressions: a long run of the repeated character followed by
 * a suffix that makes the match fail. A backtracking expression takes time in the square of the
 * run or worse (seconds on 100 KB); a linear one, in its length.
 *
 * The work is counted, not timed, so the verdict is the same on a fast machine and a loaded one:
 * the steps of a backtracking search through every expression the function runs, as V8 runs them
 * (`test/support/regex-work.ts`), on the text and on one half as long. Linear, they cost the same
 * per character of a text twice as long; quadratic, twice as much. Linear expressions here take 1
 * to 225 steps per character (the price's currency alternatives, tried at every start, the most).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { normalizeDomain } from "../../lib/competitors/domain.js";
import { findBoards } from "../../lib/competitors/extract/ats.js";
import {
  contentKey,
  extractPosts,
  feedLinks,
  postsFromSitemap,
} from "../../lib/competitors/extract/content.js";
import { type HtmlPage, loadHtml } from "../../lib/competitors/extract/html.js";
import { extractJobs } from "../../lib/competitors/extract/jobs.js";
import { maskNumbers } from "../../lib/competitors/extract/messaging.js";
import { findPrice } from "../../lib/competitors/extract/price.js";
import { extractPlans, planKey } from "../../lib/competitors/extract/pricing.js";
import { escapeHeadings } from "../../lib/files/text.js";
import { CitationMarkers, supportingQuote } from "../../lib/intel/citations.js";
import { seedFolder } from "../../lib/knowledge/crawl/scope.js";
import { chunkText, normalizeText } from "../../lib/knowledge/indexing/chunking.js";
import { queryTerms, tokenize } from "../../lib/search/terms.js";
import { parseContentType } from "../../lib/web/content-type.js";
import { type PageProfile, profilePage } from "../../lib/web/render/profile.js";
import { parseSitemap } from "../../lib/web/sitemap.js";
import { canonicalUrl } from "../../lib/web/url.js";
import { regexWork } from "../support/regex-work.js";

/** The length of the texts: the cost per character of a linear search is the same at any. */
const N = 20_000;
/** A text twice as long may cost this much more per character: linear, ~1.0; quadratic, 2. */
const LINEAR = 1.25;
/** Steps per character past which counting stops: over 15 times the costliest expression's. */
const CAP = 4096;
/** The length the texts of the cases are built at while they run. */
let size = N;
const run = (unit: string, suffix = "x") => unit.repeat(Math.ceil(size / unit.length)) + suffix;
const spaces = () => run(" ");
const chunking = { size: 1000, overlap: 100 };
const origin = "https://acme.example";
const page = (html: string, url = `${origin}/`) => loadHtml(url, html);

/** The work's result, built at `length`, and the steps of its expressions per character. */
function counted<T>(work: () => T, length: number): { result: T; perChar: number } {
  size = length;
  try {
    const { result, steps, over } = regexWork(work, CAP * length);
    expect(over, `more than ${CAP} steps per character`).toBeUndefined();
    return { result, perChar: steps / length };
  } finally {
    size = N;
  }
}

/** [what, the work, a check of its answer]. */
const cases: Array<[string, () => unknown, (result: never) => void]> = [
  // Knowledge: text sources, chunking, search.
  [
    "chunkText: a heading line of #",
    () => chunkText(`# a${run("#", "b")}\n\nBody.`, chunking),
    (chunks: { heading: string | null }[]) => expect(chunks[0]?.heading).toMatch(/^a#+b$/),
  ],
  [
    "normalizeText: spaces, tabs and line ends",
    () => normalizeText(`a${run(" \t \n ")}`),
    (text: string) => expect(text.length).toBeLessThan(N),
  ],
  [
    "normalizeText: blank lines",
    () => normalizeText(`a${run("\n")}`),
    (text: string) => expect(text).toBe("a\n\nx"),
  ],
  [
    "tokenize: words joined by apostrophes and dots",
    () => tokenize(run("a'b.", "'")),
    (words: string[]) => expect(words).toHaveLength(1),
  ],
  [
    "queryTerms: a query of many words",
    () => queryTerms(run("word ")),
    (terms: string[]) => expect(terms).toEqual(["word", "x"]),
  ],
  // Crawl path patterns are matched by hand, without an expression: crawl-scope.test.ts counts
  // the matcher's steps on 99 stars against a long path.
  [
    "seedFolder: a segment of dots",
    () => seedFolder(`/${run(".", "/x")}`),
    (folder: string) => expect(folder.endsWith("./x")).toBe(true),
  ],
  [
    "escapeHeadings (file text, DOCX): blank lines, no #",
    () => escapeHeadings(`#${run("\n")}`),
    (text: string) => expect(text).toBe(`\\#${run("\n")}`),
  ],
  // Web: URLs, headers, sitemaps.
  [
    "canonicalUrl: slashes before a last segment",
    () => canonicalUrl(`https://acme.example/a${run("/", "b")}`),
    (url: string) => expect(url.endsWith("/b")).toBe(true),
  ],
  [
    "canonicalUrl: a path of trailing slashes",
    () => canonicalUrl(`https://acme.example/a${run("/", "")}`),
    (url: string) => expect(url).toBe("https://acme.example/a"),
  ],
  [
    "canonicalUrl: session parameters",
    () => canonicalUrl(`https://acme.example/a${run(";sid=")}`),
    (url: string) => expect(url).toBe("https://acme.example/a"),
  ],
  [
    "parseContentType: spaces in a parameter",
    () => parseContentType(`text/html; charset${spaces()}`),
    (type: { charset?: string }) => expect(type.charset).toBeUndefined(),
  ],
  // Rendering: the profile that decides whether a page needs a browser or shows a wall.
  [
    "profilePage: spaces after type= in a script tag and a field, and in the title",
    () =>
      profilePage(
        `<title>a${spaces()}</title><script type=${spaces()}></script><input type=${spaces()}>`,
      ),
    (profile: PageProfile) => {
      expect(profile.scripts).toBe(1);
      expect(profile.passwordField).toBe(false);
      // The title is read from its first 300 characters.
      expect(profile.title).toBe("a");
    },
  ],
  [
    "parseSitemap: a text sitemap line that is almost a URL",
    () => parseSitemap(`https://acme.example/${run("a", " x")}`),
    (entries: { urls: string[] }) => expect(entries.urls).toEqual([]),
  ],
  // Competitor pages.
  [
    "findBoards: a run of Greenhouse embed URLs",
    () => findBoards(run("boards.greenhouse.io/embed/job_board?")),
    (boards: unknown[]) => expect(boards).toEqual([]),
  ],
  [
    "findBoards: a Greenhouse embed URL with a long query",
    () => findBoards(`boards.greenhouse.io/embed/job_board?${run("&amp;", "&for=acme")}`),
    (boards: unknown[]) => expect(boards).toEqual([]),
  ],
  [
    "contentKey: slashes before a last segment",
    () => contentKey(`https://acme.example/blog${run("/", "b")}`),
    (key: string) => expect(key.endsWith("/b")).toBe(true),
  ],
  [
    "postsFromSitemap: a slug of dots and dashes",
    () =>
      postsFromSitemap(
        [{ url: `https://acme.example/blog/${run("a.-_", ".")}/`, lastmod: null }],
        "https://acme.example/blog",
      ),
    (posts: unknown[]) => expect(posts).toHaveLength(1),
  ],
  [
    "loadHtml: a class and a style of long runs",
    () => page(`<h2 class="${run("-")}" style="display${spaces()}">Pro</h2>`),
    (parsed: HtmlPage) => expect(parsed.root.children).toHaveLength(1),
  ],
  [
    "extractPlans: a card of digit groups",
    () => extractPlans(page(`<div><h3>Pro plan</h3><p>${run("1 111")}</p></div>`)),
    (plans: unknown[]) => expect(plans).toEqual([]),
  ],
  [
    "extractJobs and extractPosts: a link of repeated segments",
    () => {
      const parsed = page(`<a href="/careers/${run("/careers")}">Role</a>`, `${origin}/careers`);
      return [...extractJobs(parsed), ...extractPosts(parsed)];
    },
    (found: unknown[]) => expect(found.length).toBeLessThanOrEqual(2),
  ],
  [
    "feedLinks: a rel of spaces",
    () => feedLinks(page(`<link rel="${spaces()}" type="application/rss+xml" href="/feed">`)),
    (links: string[]) => expect(links).toEqual([]),
  ],
  [
    "maskNumbers: a number followed by spaces",
    () => maskNumbers(`1${spaces()}`),
    (masked: string) => expect(masked.startsWith("# ")).toBe(true),
  ],
  [
    "findPrice: groups of thousands without a currency",
    () => findPrice(`1${run(" 111", " x")}`),
    (price: unknown) => expect(price).toBeUndefined(),
  ],
  [
    "findPrice: currency symbols and codes without an amount",
    () => findPrice(run("$ USD ")),
    (price: unknown) => expect(price).toBeUndefined(),
  ],
  [
    "findPrice: spaces after a price",
    () => findPrice(`$5${spaces()}`),
    (price: { amount: number } | undefined) => expect(price?.amount).toBe(5),
  ],
  [
    "planKey: spaces inside a plan name",
    () => planKey(`Pro${spaces()}`),
    (key: string) => expect(key).toBe("pro x"),
  ],
  [
    "normalizeDomain: a host that never ends",
    () => {
      try {
        return normalizeDomain(run("a-"));
      } catch (error) {
        return error;
      }
    },
    (error: Error) => expect(error.message).toMatch(/not a valid domain/),
  ],
  // Model output and grounding.
  [
    "CitationMarkers: spaces in a streamed answer",
    () => {
      const markers = new CitationMarkers(3);
      return markers.push(`a${spaces()}`) + markers.flush();
    },
    (answer: string) => expect(answer.length).toBe(spaces().length + 1),
  ],
  [
    "CitationMarkers: spaces before a marker that never closes",
    () => new CitationMarkers(3).push(`a${run(" ", "[1")}`),
    (shown: string) => expect(shown).toBe("a"),
  ],
  [
    "CitationMarkers: a list of numbers that never closes",
    () => {
      const markers = new CitationMarkers(3);
      return markers.push(`a [1${run(", 1")}`) + markers.flush();
    },
    (answer: string) => expect(answer.startsWith("a [1, 1")).toBe(true),
  ],
  [
    "supportingQuote: a passage of spaces",
    () => supportingQuote(`Pricing is fair.${spaces()}`, "pricing"),
    (quote: string) => expect(quote).toBe("Pricing is fair. x"),
  ],
];

describe("regular expressions on untrusted text", () => {
  // Parse once first: the parser's first run compiles its code, which is no cost of the input.
  beforeAll(() => page("<main><p>Warm up.</p></main>"));

  it.each(cases)("%s: searches in linear time", (_what, work, check) => {
    const half = counted(work, N / 2);
    const full = counted(work, N);
    check(full.result as never);
    expect(full.perChar).toBeLessThanOrEqual(LINEAR * half.perChar);
  });

  it("sees the work of an expression that is quadratic", () => {
    // Every start in the run of spaces reads on to its end before `$` fails on the `x`.
    const quadratic = (n: number) => () => /\s+$/.test(`a${" ".repeat(n)}x`);
    const perChar = (n: number) => regexWork(quadratic(n), Number.POSITIVE_INFINITY).steps / n;
    expect(perChar(500)).toBeGreaterThan(1.8 * perChar(250));
    // Past the cap, counting stops at the execution that ran away.
    expect(regexWork(quadratic(2000), 1000).over).toBe("/\\s+$/ from 0 of 2002 characters");
  });
});
