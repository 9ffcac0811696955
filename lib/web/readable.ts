import { createRequire } from "node:module";
import { Readability } from "@mozilla/readability";
import TurndownService from "turndown";
import { type ExtractedPage, ExtractionError, type PageJob } from "./page.js";
import { CONSENT_SELECTORS, removeConsentOverlays } from "./render/consent.js";
import { ROBOTS_AGENT } from "./robots.js";
import { canonicalUrl } from "./url.js";

/**
 * Readable content of an HTML page, inside the sandbox thread only (see extract.ts, which checks
 * the page before it gets here): jsdom is heavy (about a second to load), reads files at run
 * time, and its time and memory on hostile markup are bounded only by the thread's deadline and
 * heap. jsdom runs no scripts and loads no subresources (neither is enabled below). Readability
 * picks the article; Turndown keeps its headings as Markdown for the chunker.
 *
 * jsdom is required at run time rather than imported, so that bundles leave it out: it is
 * installed beside the functions that read pages (`nodeModules` in functions/manifest.ts).
 */
const { JSDOM, VirtualConsole } = createRequire(import.meta.url)("jsdom") as typeof import("jsdom");

/** Fewer words than this is an empty shell (a script-only app, a placeholder), not content. */
const MIN_WORDS = 5;

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

/** Reads a page in the calling thread. Throws `ExtractionError` when it has no readable text. */
export function readPage({ body, url, charset, maxLinks }: PageJob): ExtractedPage {
  const dom = new JSDOM(typeof body === "string" ? body : Buffer.from(body), {
    url,
    contentType: charset ? `text/html; charset=${charset}` : "text/html",
    virtualConsole: new VirtualConsole(),
  });
  try {
    const doc = dom.window.document;
    // Banner text must never reach an index or a diff (render/consent.ts).
    const consent = removeConsentOverlays(doc, CONSENT_SELECTORS);
    const robots = metaRobots(doc);
    const links = robots.follow ? pageLinks(doc, maxLinks) : [];
    const canonical = canonicalLink(doc);
    for (const el of doc.querySelectorAll("noscript, template")) el.remove();

    const article = new Readability(doc, { serializer: (el: Node) => el }).parse();
    const content = article?.content as unknown as HTMLElement | undefined;
    const text = squash(article?.textContent ?? "");
    if (!content || text.split(" ").filter((w) => /\w/.test(w)).length < MIN_WORDS) {
      if (consent > 0) {
        throw new ExtractionError("blocked", "The page shows only a cookie-consent banner");
      }
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
