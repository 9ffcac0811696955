import { nextElementSibling } from "domutils";
import { all, attr, closest, first, type HtmlPage, tag, textOf } from "./html.js";

/** What a homepage says about the company: the headline and the main claims under it. */
export interface Messaging {
  headline: string | null;
  claims: string[];
}

const MAX_CLAIMS = 12;
const MAX_CLAIM_LENGTH = 300;

/**
 * Counters and dates in copy ("Trusted by 10,512 teams", "© 2025") move without the message
 * changing: comparisons see every run of digits as one placeholder.
 */
export const maskNumbers = (text: string) =>
  text.replace(/\d[\d,.\u00a0 ]*\d|\d/g, "#").toLowerCase();

/**
 * The homepage's headline (its first `h1`, else the social title, else `<title>`) and its claims:
 * the meta description, the line right under the headline, and the section headings of the main
 * content (navigation, asides and footer left out).
 */
export function extractMessaging(page: HtmlPage): Messaging {
  const { root } = page;
  const meta = (key: string, value: string) =>
    first(root, (el) => el.name === "meta" && attr(el, key) === value);
  const h1 = first(root, tag("h1"));
  const title = first(root, tag("title"));
  const social = meta("property", "og:title");
  const headline =
    (h1 && textOf(h1)) ||
    (social && attr(social, "content").trim()) ||
    (title && textOf(title)) ||
    null;
  const main = first(root, tag("main")) ?? first(root, tag("body")) ?? root;
  const claims: string[] = [];
  const add = (text: string) => {
    const claim = text.replace(/\s+/g, " ").trim();
    if (claim && claim.length <= MAX_CLAIM_LENGTH && !claims.includes(claim)) claims.push(claim);
  };
  const description = meta("name", "description");
  if (description) add(attr(description, "content"));
  const sub = h1 && nextElementSibling(h1);
  if (sub && tag("p", "h2", "h3")(sub)) add(textOf(sub));
  for (const heading of all(main, tag("h2"))) {
    if (!closest(heading, tag("nav", "footer", "aside"))) add(textOf(heading));
  }
  return { headline, claims: claims.slice(0, MAX_CLAIMS) };
}
