/**
 * What a page's HTML says about itself before any parser runs: its title, how many words of text
 * it shows without scripts, how much script it carries, whether its app root is empty and whether
 * its `<noscript>` asks for JavaScript. One linear pass of `indexOf` over the markup (no regular
 * expression meets it), so deciding whether a page needs a browser, or is a bot wall, costs a
 * small fraction of extracting it (bench/: `render: auto` against `never`).
 */

export interface PageProfile {
  /** The `<title>`, lowercase and squashed; empty without one. */
  title: string;
  /** Words of visible text outside scripts, styles, templates and `<noscript>`. */
  words: number;
  /** `<script>` elements that run (JSON data blocks left out). */
  scripts: number;
  /** Bytes of inline script. */
  inlineScriptBytes: number;
  /** The id of an app root element with nothing inside (`<div id="root"></div>`), if any. */
  emptyRoot: string | undefined;
  /** Whether a `<noscript>` asks the reader to turn JavaScript on. */
  noscriptAsksForScripts: boolean;
  /** Whether the page has a password field (a login form). */
  passwordField: boolean;
  /** The whole markup, lowercase: vendors' markers are looked up in it. */
  lower: string;
}

/** Ids single-page apps mount into (React, Next, Nuxt, Gatsby, Angular, Svelte, Vue). */
const APP_ROOTS = [
  "root",
  "app",
  "__next",
  "__nuxt",
  "___gatsby",
  "app-root",
  "react-root",
  "svelte",
  "main-app",
  "application",
];

/** What a `<noscript>` says when the page shows nothing without scripts. */
const ASKS_FOR_SCRIPTS = [
  "enable javascript",
  "javascript is required",
  "javascript is disabled",
  "requires javascript",
  "need to enable javascript",
  "turn on javascript",
  "javascript to run this app",
  "javascript enabled",
];

/** Elements whose content is no visible text. */
const SKIPPED = ["script", "style", "noscript", "template", "svg"];

/** Script types that hold data rather than code (JSON-LD, a framework's state). */
const DATA_SCRIPT = /type\s*=\s*["']?application\/(ld\+)?json/;

const isSpace = (code: number) => code === 32 || (code >= 9 && code <= 13);

/** Words in `text[from, to)`: runs of non-space characters, counted without copying. */
function countWords(text: string, from: number, to: number): number {
  let words = 0;
  let inWord = false;
  for (let i = from; i < to; i++) {
    const space = isSpace(text.charCodeAt(i));
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

/** The tag name at `lower[at]` (just after `<`), and whether it closes. */
function tagAt(lower: string, at: number): { name: string; closing: boolean } {
  const closing = lower[at] === "/";
  let end = closing ? at + 1 : at;
  const start = end;
  while (end < lower.length && end - start < 20) {
    const c = lower.charCodeAt(end);
    const letter = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45;
    if (!letter) break;
    end++;
  }
  return { name: lower.slice(start, end), closing };
}

function emptyRootOf(lower: string): string | undefined {
  for (const id of APP_ROOTS) {
    for (const quote of ['"', "'"]) {
      const attr = `id=${quote}${id}${quote}`;
      const at = lower.indexOf(attr);
      if (at < 0) continue;
      const open = lower.indexOf(">", at);
      if (open < 0) continue;
      let next = open + 1;
      while (next < lower.length && isSpace(lower.charCodeAt(next))) next++;
      if (lower.startsWith("</", next)) return id;
    }
  }
  return undefined;
}

/** The profile of a page's markup (see `PageProfile`); linear in its length. */
export function profilePage(html: string): PageProfile {
  const lower = html.toLowerCase();
  let words = 0;
  let scripts = 0;
  let inlineScriptBytes = 0;
  let noscriptAsksForScripts = false;
  let pos = 0;
  while (pos < lower.length) {
    const lt = lower.indexOf("<", pos);
    const textEnd = lt < 0 ? lower.length : lt;
    words += countWords(html, pos, textEnd);
    if (lt < 0) break;
    if (lower.startsWith("<!--", lt)) {
      const end = lower.indexOf("-->", lt + 4);
      pos = end < 0 ? lower.length : end + 3;
      continue;
    }
    const gt = lower.indexOf(">", lt + 1);
    if (gt < 0) break;
    const { name, closing } = tagAt(lower, lt + 1);
    pos = gt + 1;
    if (closing || !SKIPPED.includes(name)) continue;
    const close = lower.indexOf(`</${name}`, pos);
    const end = close < 0 ? lower.length : close;
    if (name === "script" && !DATA_SCRIPT.test(lower.slice(lt, gt))) {
      scripts++;
      inlineScriptBytes += end - pos;
    } else if (name === "noscript" && !noscriptAsksForScripts) {
      const inside = lower.slice(pos, Math.min(end, pos + 4000));
      noscriptAsksForScripts = ASKS_FOR_SCRIPTS.some((ask) => inside.includes(ask));
    }
    pos = end;
  }
  return {
    title: titleOf(lower),
    words,
    scripts,
    inlineScriptBytes,
    emptyRoot: emptyRootOf(lower),
    noscriptAsksForScripts,
    passwordField: /type\s*=\s*["']?password/.test(lower),
    lower,
  };
}

function titleOf(lower: string): string {
  const open = lower.indexOf("<title");
  if (open < 0) return "";
  const start = lower.indexOf(">", open);
  if (start < 0) return "";
  const end = lower.indexOf("</title", start);
  const raw = lower.slice(start + 1, end < 0 ? start + 301 : Math.min(end, start + 301));
  return raw
    .replace(/\s+/g, " ")
    .replace(/&hellip;/g, "…")
    .trim();
}
