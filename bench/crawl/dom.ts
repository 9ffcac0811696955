import { Readability } from "@mozilla/readability";
import { JSDOM, VirtualConsole } from "jsdom";
import { parseHTML } from "linkedom";

/**
 * The DOM-bound part of `readPage` (lib/web/readable.ts) on either DOM: parse, collect the
 * links, run Readability. Turndown, which runs on Readability's result, is left out of both. The
 * answer says what Readability found, so the two DOMs can be compared on output as well as time.
 */
export type DomName = "jsdom" | "linkedom";

export interface Readable {
  /** Readability's text, whitespace squashed; empty when it found no article. */
  text: string;
  links: number;
}

const squash = (text: string) => text.replace(/\s+/g, " ").trim();

function read(doc: Document, base: string): Readable {
  const links = [...doc.querySelectorAll("a[href]")].flatMap((a) => {
    try {
      return [new URL(a.getAttribute("href") ?? "", base).href];
    } catch {
      return [];
    }
  });
  const article = new Readability(doc).parse();
  return { text: squash(article?.textContent ?? ""), links: new Set(links).size };
}

export function readWith(dom: DomName, html: string, url: string): Readable {
  if (dom === "linkedom") {
    // linkedom has no URL of its own: links are resolved against the page's URL, as jsdom does.
    const { document } = parseHTML(html);
    return read(document as unknown as Document, url);
  }
  const page = new JSDOM(html, {
    url,
    contentType: "text/html",
    virtualConsole: new VirtualConsole(),
  });
  try {
    return read(page.window.document, url);
  } finally {
    page.window.close();
  }
}
