/**
 * The shape of HTML markup, measured before any parser sees it: one linear pass, no DOM. It
 * counts start tags and follows the nesting of open elements closely enough to refuse a page
 * whose DOM would be too deep for the DOM code that reads it (Readability's time grows steeply
 * with depth; htmlparser2's open-element stack is quadratic in it).
 *
 * It errs towards counting too little, never too much, so real pages are not refused: elements
 * whose end tag HTML lets authors omit (`p`, `li`, `td`, ...) and void elements do not nest here,
 * script and style contents, comments and attribute values are skipped, and `/>` closes an element
 * inside SVG or MathML only (HTML ignores it elsewhere, so `<div/>` nests as it does in a browser).
 * An end tag closes the nearest open element of its name and everything opened inside it; one
 * with no such element open is ignored, as the parser ignores it.
 */

export interface MarkupShape {
  /** Start tags, void and optional-end elements included. */
  elements: number;
  /** Deepest nesting of elements reached. */
  depth: number;
}

const VOID = new Set(
  "area base br col embed hr img input keygen link meta param source track wbr".split(" "),
);
const OPTIONAL_END = new Set([
  ..."p li dt dd tr td th thead tbody tfoot caption colgroup option optgroup".split(" "),
  ..."rb rt rp rtc html head body".split(" "),
]);
/** Elements whose content is text up to their own end tag. */
const RAW_TEXT = new Set("script style textarea title xmp iframe noembed noframes".split(" "));
const FOREIGN = new Set(["svg", "math"]);

const isLetter = (code: number) => (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a);
const isSpace = (code: number) => code === 0x20 || (code >= 0x09 && code <= 0x0d);
/** Where a tag name ends: whitespace, `/` or `>`. */
const ends = (code: number) => isSpace(code) || code === 0x2f || code === 0x3e;

/** Measures markup given as text or as bytes of an ASCII-compatible encoding. */
export function markupShape(body: string | Uint8Array): MarkupShape {
  const html = (
    typeof body === "string"
      ? body
      : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("latin1")
  ).toLowerCase();
  const open: string[] = [];
  const openCount = new Map<string, number>();
  let foreign = 0;
  let elements = 0;
  let depth = 0;

  const push = (name: string) => {
    open.push(name);
    openCount.set(name, (openCount.get(name) ?? 0) + 1);
    if (FOREIGN.has(name)) foreign++;
    depth = Math.max(depth, open.length);
  };
  const closeUpTo = (name: string) => {
    if (!openCount.get(name)) return;
    for (let top = open.pop(); top !== undefined; top = open.pop()) {
      openCount.set(top, (openCount.get(top) ?? 1) - 1);
      if (FOREIGN.has(top)) foreign--;
      if (top === name) return;
    }
  };
  /** Index after the `>` that ends a tag whose attributes start at `from`. */
  const endOfTag = (from: number): number => {
    let i = from;
    let afterEquals = false;
    while (i < html.length) {
      const code = html.charCodeAt(i);
      if (code === 0x3e) return i + 1;
      if (afterEquals && (code === 0x22 || code === 0x27)) {
        const close = html.indexOf(code === 0x22 ? '"' : "'", i + 1);
        if (close < 0) return html.length;
        i = close + 1;
        afterEquals = false;
        continue;
      }
      if (code === 0x3d) afterEquals = true;
      else if (!isSpace(code)) afterEquals = false;
      i++;
    }
    return html.length;
  };
  const skipPast = (from: number, marker: string) => {
    const at = html.indexOf(marker, from);
    return at < 0 ? html.length : at + marker.length;
  };
  /** Index of the end tag `</name` that ends a raw text element's content. */
  const rawTextEnd = (from: number, name: string) => {
    for (
      let at = html.indexOf(`</${name}`, from);
      at >= 0;
      at = html.indexOf(`</${name}`, at + 1)
    ) {
      const after = html.charCodeAt(at + name.length + 2);
      if (Number.isNaN(after) || ends(after)) return at;
    }
    return html.length;
  };

  let i = html.indexOf("<");
  while (i >= 0 && i < html.length - 1) {
    const next = html.charCodeAt(i + 1);
    if (html.startsWith("<!--", i)) {
      i = skipPast(i + 4, "-->");
    } else if (next === 0x21 || next === 0x3f) {
      i = skipPast(i + 2, ">");
    } else if (next === 0x2f) {
      let end = i + 2;
      while (end < html.length && !ends(html.charCodeAt(end))) end++;
      if (isLetter(html.charCodeAt(i + 2))) closeUpTo(html.slice(i + 2, end));
      i = skipPast(end, ">");
    } else if (isLetter(next)) {
      let end = i + 1;
      while (end < html.length && !ends(html.charCodeAt(end))) end++;
      const name = html.slice(i + 1, end);
      elements++;
      i = endOfTag(end);
      const selfClosing = html.endsWith("/>", i);
      if (name === "plaintext") break;
      if (RAW_TEXT.has(name)) i = rawTextEnd(i, name);
      else if (!VOID.has(name) && !OPTIONAL_END.has(name) && !(selfClosing && foreign > 0)) {
        push(name);
      }
    } else {
      i++;
    }
    i = html.indexOf("<", i);
  }
  return { elements, depth };
}
