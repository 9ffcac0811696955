import { type AnyNode, type Document, type Element, hasChildren, isTag, isText } from "domhandler";
import { findAll, findOne, getAttributeValue, removeElement } from "domutils";
import { parseDocument } from "htmlparser2";
import { checkMarkup, MAX_DEPTH } from "../../web/page.js";

/**
 * HTML through htmlparser2 and a handful of helpers: light enough for an API bundle (no jsdom, no
 * CSS selector engine), and checks only ever need tags, attributes, text and ancestry.
 */

export type { Element };

/** A fetched HTML page, parsed once and stripped of what never carries facts. */
export interface HtmlPage {
  url: string;
  root: Document;
  /** Parsed JSON-LD blocks (read before scripts are removed). */
  jsonLd: unknown[];
  /** The HTML as fetched: embed scripts of job boards are found in it. */
  raw: string;
}

export interface Link {
  url: string;
  text: string;
}

type Scope = Document | Element;

/** Elements that are never content: code, embeds, struck-out old prices, form fields and tokens. */
const NOISE_TAGS = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "iframe",
  "canvas",
  "object",
  "del",
  "s",
  "strike",
  "input",
  "blockquote",
]);

/**
 * Widgets whose text changes from one visit to the next without the company changing anything:
 * cookie and consent banners, rotating testimonials and reviews.
 */
const NOISE_NAME =
  /cookie|consent|gdpr|onetrust|testimonial|(?:^|[-_\s])(?:reviews?|quotes?)(?:$|[-_\s])/i;

/** Elements whose text runs on with their neighbours'; every other element is a block. */
const INLINE = new Set([
  "a",
  "abbr",
  "b",
  "bdi",
  "cite",
  "code",
  "data",
  "em",
  "font",
  "i",
  "label",
  "mark",
  "q",
  "small",
  "span",
  "strong",
  "sub",
  "sup",
  "time",
  "u",
]);

export const attr = (el: Element, name: string): string => getAttributeValue(el, name) ?? "";

/** A test for elements with one of the given tag names. */
export const tag =
  (...names: string[]) =>
  (el: Element) =>
    names.includes(el.name);

export const all = (scope: Scope, test: (el: Element) => boolean): Element[] =>
  findAll(test, scope.children);

export const first = (scope: Scope, test: (el: Element) => boolean): Element | null =>
  findOne(test, scope.children);

export const parentOf = (el: Element): Element | null =>
  el.parent && isTag(el.parent) ? el.parent : null;

/** The nearest ancestor that passes the test. */
export function closest(el: Element, test: (el: Element) => boolean): Element | null {
  for (let node = parentOf(el); node; node = parentOf(node)) if (test(node)) return node;
  return null;
}

export function isInside(el: Element, ancestor: Element): boolean {
  for (let node = el.parent; node; node = node.parent) if (node === ancestor) return true;
  return false;
}

/** Text of a node with block boundaries kept as spaces, whitespace collapsed. */
export function textOf(node: AnyNode): string {
  const parts: string[] = [];
  const walk = (n: AnyNode) => {
    if (isText(n)) {
      parts.push(n.data);
      return;
    }
    const block = isTag(n) && !INLINE.has(n.name);
    if (block) parts.push(" ");
    if (hasChildren(n)) for (const child of n.children) walk(child);
    if (block) parts.push(" ");
  };
  walk(node);
  return parts.join("").replace(/\s+/g, " ").trim();
}

function isNoise(el: Element): boolean {
  if (NOISE_TAGS.has(el.name) || "hidden" in el.attribs) return true;
  if (NOISE_NAME.test(`${attr(el, "id")} ${attr(el, "class")}`)) return true;
  return /display\s*:\s*none|visibility\s*:\s*hidden/i.test(attr(el, "style"));
}

function readJsonLd(root: Document): unknown[] {
  const blocks: unknown[] = [];
  const scripts = all(
    root,
    (el) => el.name === "script" && attr(el, "type") === "application/ld+json",
  );
  for (const script of scripts) {
    try {
      const value = JSON.parse(textOf(script)) as unknown;
      blocks.push(...(Array.isArray(value) ? value : [value]));
    } catch {
      // A broken block says nothing; the page's markup still may.
    }
  }
  return blocks;
}

/**
 * Parses a fetched page. One nested deeper than MAX_DEPTH is refused first (an ExtractionError,
 * `too_complex`): htmlparser2's time grows with the square of the depth, and `textOf` recurses
 * through it.
 */
export function loadHtml(url: string, raw: string): HtmlPage {
  checkMarkup(raw, { maxDepth: MAX_DEPTH });
  const root = parseDocument(raw);
  const jsonLd = readJsonLd(root);
  for (const el of all(root, isNoise)) removeElement(el);
  return { url, root, jsonLd, raw };
}

/** An absolute http(s) URL without its fragment, or undefined when `href` is not one. */
export function resolveUrl(href: string, base: string): string | undefined {
  try {
    const url = new URL(href.trim(), base);
    if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
    url.hash = "";
    return url.href;
  } catch {
    return undefined;
  }
}

/** The page's links, in document order, once each. */
export function linksOf(page: HtmlPage): Link[] {
  const seen = new Set<string>();
  const links: Link[] = [];
  for (const a of all(page.root, (el) => el.name === "a" && "href" in el.attribs)) {
    const url = resolveUrl(attr(a, "href"), page.url);
    if (!url || seen.has(url)) continue;
    seen.add(url);
    links.push({ url, text: textOf(a) || attr(a, "aria-label").trim() });
  }
  return links;
}

/** JSON-LD nodes of a given `@type`, looking inside `@graph` containers too. */
export function jsonLdOfType(page: HtmlPage, type: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const visit = (node: unknown) => {
    if (!node || typeof node !== "object") return;
    if (Array.isArray(node)) return node.forEach(visit);
    const record = node as Record<string, unknown>;
    const types = ([] as unknown[]).concat(record["@type"]);
    if (types.includes(type)) found.push(record);
    visit(record["@graph"]);
  };
  page.jsonLd.forEach(visit);
  return found;
}
