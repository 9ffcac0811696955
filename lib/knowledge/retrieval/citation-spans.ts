/**
 * How a result points at its passage beyond its offsets: the heading trail as a list, and for a
 * web page a URL with a text fragment (`#:~:text=start,end`), which browsers scroll to and
 * highlight. The chunk text is Markdown extracted from the page, so the fragment is made of its
 * words without Markdown's marks: the page shows words, not `**` or link targets.
 */

/** The chunker joins a heading trail with " > " (see `chunking.ts`). */
export const headingPath = (heading: string | null): string[] =>
  heading ? heading.split(" > ") : [];

/** Words a fragment takes from each end of a long passage: enough to be unique on a page. */
const FRAGMENT_WORDS = 4;

/** The passage's words as a page shows them: link text without its target, no emphasis marks. */
function visibleWords(markdown: string): string[] {
  const text = markdown
    .replace(/!?\[([^\]\n]{0,500})\]\([^)\n]{0,2000}\)/g, "$1")
    .replace(/^[ \t]{0,3}(?:#{1,6}|>|[-*+]|\d{1,9}[.)])[ \t]+/gm, "")
    .replace(/[*_`|]+/g, " ");
  return text.split(/\s+/).filter(Boolean);
}

/** A text fragment's term: percent-encoded, with `-`, `,` and `&` (its syntax) escaped too. */
const term = (words: string[]) => encodeURIComponent(words.join(" ")).replace(/-/g, "%2D");

/** The page's URL opening at the passage; the URL alone when the passage has no words. */
export function passageUrl(pageUrl: string, passage: string): string {
  const page = pageUrl.split("#", 1)[0] as string;
  const words = visibleWords(passage);
  if (words.length === 0) return page;
  if (words.length <= FRAGMENT_WORDS * 2) return `${page}#:~:text=${term(words)}`;
  const start = term(words.slice(0, FRAGMENT_WORDS));
  const end = term(words.slice(-FRAGMENT_WORDS));
  return `${page}#:~:text=${start},${end}`;
}
