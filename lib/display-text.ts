/**
 * Display strings: the names and titles the service shows back as labels (a source's name, an
 * artifact's title, a webhook's description, a brand's name...). A label is one line that reads
 * as it looks, so it holds none of
 * - bidirectional controls (embeddings, overrides, isolates, marks), which reorder what follows
 *   them: `report\u202Efdp.exe` shows as `reportexe.pdf`;
 * - control characters (C0, DEL, C1, NUL among them) and line breaks, tabs included;
 * and it is not empty once its invisible characters (whitespace, zero-width spaces and joiners,
 * the word joiner, byte order marks, soft hyphens, variation selectors and the rest of Unicode's
 * default-ignorable characters) are left out. Joiners and variation selectors stay allowed beside
 * visible text: emoji sequences and Persian or Indic script need them.
 *
 * What a caller sends is refused when it breaks the rule (`displayText` in lib/http/schemas.ts);
 * what the service derives itself (a first line, a page's title, a file's name) is made to keep
 * it with `toDisplayText`. Both read the one definition below.
 */

/** Bidi controls: ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI. */
const BIDI = "\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069";
/** Control characters (C0, DEL, C1) and the line and paragraph separators. */
const CONTROL = "\\p{Cc}\\u2028\\u2029";

const REFUSED = new RegExp(`[${BIDI}${CONTROL}]`, "u");
const BIDI_CONTROL = new RegExp(`[${BIDI}]`, "u");
const REFUSED_ALL = new RegExp(`[${BIDI}${CONTROL}]`, "gu");
/** Controls that break or space a line; as derived text they become a space. */
const SPACING = /[\t\n\v\f\r\u0085\u2028\u2029]/gu;
/** What shows nothing: whitespace and default-ignorable characters (ZWSP, ZWJ, SHY, VS, BOM...). */
const INVISIBLE = /[\s\p{Default_Ignorable_Code_Point}]/gu;

/** The rule as the API reference states it, once. */
export const DISPLAY_TEXT_RULE =
  "One line of visible text: no control characters (NUL, tabs, line breaks), no bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), and not only invisible characters (whitespace, zero-width characters, soft hyphens, variation selectors)";

const codePoint = (char: string) =>
  `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;

/** Whether the text shows anything once its invisible characters are left out. */
export const isVisible = (text: string) => text.replace(INVISIBLE, "") !== "";

/** Why `text` is not a display string (a sentence naming the character), or undefined when it is. */
export function displayTextProblem(text: string): string | undefined {
  const refused = REFUSED.exec(text)?.[0];
  if (refused !== undefined) {
    const kind = BIDI_CONTROL.test(refused)
      ? "a bidirectional control character, which changes how the text reads"
      : "a control character or line break";
    return `Contains ${codePoint(refused)}, ${kind}; give one line of visible text`;
  }
  if (!isVisible(text)) return "Is empty once invisible characters are left out";
  return undefined;
}

/**
 * A derived name made a display string: line breaks and tabs become spaces, other controls and
 * bidi controls are dropped, the ends trimmed; "" when nothing visible is left (use a fallback).
 */
export function toDisplayText(text: string): string {
  const safe = text.replace(SPACING, " ").replace(REFUSED_ALL, "").trim();
  return isVisible(safe) ? safe : "";
}
