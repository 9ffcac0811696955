/**
 * Every regular expression that meets untrusted text (pages, feeds, files, URLs, queries, model
 * output) runs in linear time, or on input bounded before it runs. Each function below gets
 * ~100 KB shaped like the worst case for its expressions: a long run of the repeated character
 * followed by a suffix that makes the match fail. A backtracking expression takes seconds on
 * these (quadratic or worse); a linear one, a few milliseconds. The bound is generous so a loaded
 * machine does not make it flaky.
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
import { pathPattern, seedFolder } from "../../lib/knowledge/crawl/scope.js";
import { chunkText, normalizeText } from "../../lib/knowledge/indexing/chunking.js";
import { queryTerms, tokenize } from "../../lib/search/terms.js";
import { parseContentType } from "../../lib/web/content-type.js";
import { parseSitemap } from "../../lib/web/sitemap.js";
import { canonicalUrl } from "../../lib/web/url.js";

const N = 100_000;
const LIMIT_MS = 250;
const run = (unit: string, suffix = "x") => unit.repeat(Math.ceil(N / unit.length)) + suffix;
const spaces = run(" ");
const chunking = { size: 1000, overlap: 100 };
const origin = "https://acme.example";
const page = (html: string, url = `${origin}/`) => loadHtml(url, html);

function timed<T>(work: () => T): { result: T; ms: number } {
  const started = performance.now();
  const result = work();
  return { result, ms: performance.now() - started };
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
  [
    "crawl path pattern: 99 stars against a long path",
    () => pathPattern(`/${"*a".repeat(99)}*b`)(`/${run("a", "c")}`),
    (matched: boolean) => expect(matched).toBe(false),
  ],
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
    () => parseContentType(`text/html; charset${spaces}`),
    (type: { charset?: string }) => expect(type.charset).toBeUndefined(),
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
    () => page(`<h2 class="${run("-")}" style="display${spaces}">Pro</h2>`),
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
    () => feedLinks(page(`<link rel="${spaces}" type="application/rss+xml" href="/feed">`)),
    (links: string[]) => expect(links).toEqual([]),
  ],
  [
    "maskNumbers: a number followed by spaces",
    () => maskNumbers(`1${spaces}`),
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
    () => findPrice(`$5${spaces}`),
    (price: { amount: number } | undefined) => expect(price?.amount).toBe(5),
  ],
  [
    "planKey: spaces inside a plan name",
    () => planKey(`Pro${spaces}`),
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
      return markers.push(`a${spaces}`) + markers.flush();
    },
    (answer: string) => expect(answer.length).toBe(spaces.length + 1),
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
    () => supportingQuote(`Pricing is fair.${spaces}`, "pricing"),
    (quote: string) => expect(quote).toBe("Pricing is fair. x"),
  ],
];

describe("regular expressions on untrusted text", () => {
  // Parse once first: the parser's first run compiles its code, which is no cost of the input.
  beforeAll(() => page("<main><p>Warm up.</p></main>"));

  it.each(cases)(`%s: under ${LIMIT_MS} ms on ~100 KB`, (_what, work, check) => {
    const { result, ms } = timed(work);
    check(result as never);
    expect(ms).toBeLessThan(LIMIT_MS);
  });
});
