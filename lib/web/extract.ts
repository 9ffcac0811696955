import { createRequire } from "node:module";
import { Readability } from "@mozilla/readability";
import TurndownService from "turndown";
import { ROBOTS_AGENT } from "./robots.js";
import { canonicalUrl } from "./url.js";

/**
 * Readable content of an HTML page, for the workers only: jsdom is heavy and reads files at run
 * time, so no API function may import this module. jsdom runs no scripts and loads no
 * subresources (neither is enabled below); input is bounded in bytes and in elements before it is
 * parsed. Readability picks the article; Turndown keeps its headings as Markdown for the chunker.
 *
 * jsdom takes about a second to load, so it is loaded on the first page extracted: a worker that
 * only indexes text or files (the index worker, mostly) never pays for it.
 */
const requireAtRunTime = createRequire(import.meta.url);
let jsdom: typeof import("jsdom") | undefined;
const loadJsdom = () => {
  jsdom ??= requireAtRunTime("jsdom") as typeof import("jsdom");
  return jsdom;
};

export type ExtractionErrorCode = "too_large" | "too_complex" | "empty_content";

export class ExtractionError extends Error {
  constructor(
    readonly code: ExtractionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ExtractionError";
  }
}

export interface ExtractLimits {
  maxBytes: number;
  /** Most elements parsed; estimated from the markup before parsing. */
  maxElements: number;
  /** Most links reported. */
  maxLinks: number;
}

const DEFAULT_EXTRACT_LIMITS: ExtractLimits = {
  maxBytes: 3 * 1024 * 1024,
  maxElements: 60_000,
  maxLinks: 2000,
};

/** Fewer words than this is an empty shell (a script-only app, a placeholder), not content. */
const MIN_WORDS = 5;

export interface ExtractedPage {
  title: string | null;
  /** The readable content as Markdown, headed by the title. */
  markdown: string;
  /** Absolute, canonical http(s) links in page order, without duplicates or `rel=nofollow`. */
  links: string[];
  /** The page's `rel=canonical`, canonicalised. */
  canonical: string | null;
  /** False when `<meta name="robots">` says noindex. */
  index: boolean;
  /** False when `<meta name="robots">` says nofollow. */
  follow: boolean;
}

export interface ExtractOptions {
  /** From the response's Content-Type; a `<meta charset>` in the page is honoured otherwise. */
  charset?: string | undefined;
  limits?: Partial<ExtractLimits>;
}

const turndown = new TurndownService({
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
});
turndown.remove(["script", "style", "noscript", "iframe", "form", "button", "select", "textarea"]);
// Link targets and images are noise in a search index: keep the words, drop the addresses.
turndown.addRule("linkText", { filter: "a", replacement: (content) => content });
turndown.addRule("noImages", {
  filter: (node) => ["IMG", "PICTURE", "SVG"].includes(node.nodeName.toUpperCase()),
  replacement: () => "",
});

/** Counts `<` followed by a letter: an upper bound of the elements the parser will create. */
function estimateElements(body: Uint8Array | string): number {
  let count = 0;
  const at = typeof body === "string" ? (i: number) => body.charCodeAt(i) : (i: number) => body[i];
  for (let i = 0; i < body.length - 1; i++) {
    if (at(i) !== 0x3c) continue;
    const next = (at(i + 1) ?? 0) | 0x20;
    if (next >= 0x61 && next <= 0x7a) count++;
  }
  return count;
}

const squash = (text: string) => text.replace(/\s+/g, " ").trim();

function metaRobots(doc: Document): { index: boolean; follow: boolean } {
  const directives = [...doc.querySelectorAll("meta[name][content]")]
    .filter((m) => ["robots", ROBOTS_AGENT].includes((m.getAttribute("name") ?? "").toLowerCase()))
    .flatMap((m) => (m.getAttribute("content") ?? "").toLowerCase().split(/[\s,]+/));
  const none = directives.includes("none");
  return {
    index: !none && !directives.includes("noindex"),
    follow: !none && !directives.includes("nofollow"),
  };
}

function pageLinks(doc: Document, maxLinks: number): string[] {
  const links = new Set<string>();
  for (const a of doc.querySelectorAll("a[href], area[href]")) {
    if (links.size >= maxLinks) break;
    const rel = (a.getAttribute("rel") ?? "").toLowerCase().split(/\s+/);
    if (rel.includes("nofollow")) continue;
    const url = canonicalUrl(a.getAttribute("href") ?? "", doc.baseURI);
    if (url) links.add(url);
  }
  return [...links];
}

function canonicalLink(doc: Document): string | null {
  const link = [...doc.querySelectorAll("link[rel][href]")].find((l) =>
    (l.getAttribute("rel") ?? "").toLowerCase().split(/\s+/).includes("canonical"),
  );
  return link ? canonicalUrl(link.getAttribute("href") ?? "", doc.baseURI) : null;
}

/** Extracts a page fetched from `url`. Throws `ExtractionError` when it is too big or has no text. */
export function extractPage(
  body: Uint8Array | string,
  url: string,
  options: ExtractOptions = {},
): ExtractedPage {
  const limits = { ...DEFAULT_EXTRACT_LIMITS, ...options.limits };
  const bytes = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
  if (bytes > limits.maxBytes) {
    throw new ExtractionError("too_large", `The page is larger than ${limits.maxBytes} bytes`);
  }
  if (estimateElements(body) > limits.maxElements) {
    throw new ExtractionError(
      "too_complex",
      `The page has more than ${limits.maxElements} elements`,
    );
  }

  const { JSDOM, VirtualConsole } = loadJsdom();
  const dom = new JSDOM(typeof body === "string" ? body : Buffer.from(body), {
    url,
    contentType: options.charset ? `text/html; charset=${options.charset}` : "text/html",
    virtualConsole: new VirtualConsole(),
  });
  try {
    const doc = dom.window.document;
    const robots = metaRobots(doc);
    const links = robots.follow ? pageLinks(doc, limits.maxLinks) : [];
    const canonical = canonicalLink(doc);
    for (const el of doc.querySelectorAll("noscript, template")) el.remove();

    const article = new Readability(doc, { serializer: (el: Node) => el }).parse();
    const content = article?.content as unknown as HTMLElement | undefined;
    const text = squash(article?.textContent ?? "");
    if (!content || text.split(" ").filter((w) => /\w/.test(w)).length < MIN_WORDS) {
      throw new ExtractionError("empty_content", "The page has no readable text");
    }
    const title = squash(article?.title || doc.title) || null;
    const markdown = turndown.turndown(content).trim();
    return {
      title,
      markdown: title ? `# ${title}\n\n${markdown}` : markdown,
      links,
      canonical,
      ...robots,
    };
  } finally {
    dom.window.close();
  }
}
