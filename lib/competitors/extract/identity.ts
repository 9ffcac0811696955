import { toDisplayText } from "../../display-text.js";
import { attr, first, type HtmlPage, jsonLdOfType, tag, textOf } from "./html.js";

/** Longest name kept: a company's name, not a sentence. */
const MAX_NAME = 80;
/** Separators of a title's parts: "Pricing | Acme", "Acme: websites for marketers". */
const TITLE_PARTS = /\s+[|\-–—·•]\s+|:\s+/;
const YEARS = /^(?:\d{4}(?:\s*[-–]\s*\d{4})?)?\s*/;

const clean = (text: string) => text.replace(/\s+/g, " ").trim();
const squash = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
const named = (text: string | null | undefined) => {
  const name = toDisplayText(clean(text ?? ""));
  return name && name.length <= MAX_NAME ? name : null;
};

/** "© 2019-2025 Acme Inc. All rights reserved." -> "Acme Inc": the footer's copyright holder. */
function copyrightHolder(page: HtmlPage): string | null {
  const text = textOf(first(page.root, tag("footer")) ?? page.root);
  const at = text.lastIndexOf("©");
  if (at < 0) return null;
  const rest = text
    .slice(at + 1, at + 200)
    .trimStart()
    .replace(YEARS, "");
  const end = [". ", "|", ",", " All rights"]
    .map((stop) => rest.indexOf(stop))
    .filter((i) => i >= 0)
    .reduce((a, b) => Math.min(a, b), rest.length);
  return named(rest.slice(0, end).replace(/\.$/, ""));
}

/**
 * The company's name as its own site states it: its JSON-LD organisation, else the site name it
 * gives social networks or browsers, else the part of the homepage's title that is the domain's
 * name or the footer's copyright holder (`Acme: websites for marketers` with `© Acme Inc.` ->
 * `Acme`), else that holder. Null when the site does not say.
 */
export function extractCompanyName(page: HtmlPage): string | null {
  for (const type of ["Organization", "Corporation"]) {
    const name = jsonLdOfType(page, type)
      .map((node) => (typeof node.name === "string" ? named(node.name) : null))
      .find(Boolean);
    if (name) return name;
  }
  const meta = (key: string, value: string) =>
    first(page.root, (el) => el.name === "meta" && attr(el, key) === value);
  for (const el of [meta("property", "og:site_name"), meta("name", "application-name")]) {
    const name = el && named(attr(el, "content"));
    if (name) return name;
  }
  const title = first(page.root, tag("title"));
  // A title is short; a page's may not be, and only its start names anything.
  const parts = title
    ? textOf(title).slice(0, 300).split(TITLE_PARTS).map(clean).filter(Boolean)
    : [];
  const label = new URL(page.url).hostname.replace(/^www\./, "").split(".")[0] ?? "";
  const holder = copyrightHolder(page);
  if (parts.length > 1) {
    const part = parts.find(
      (p) =>
        (label && squash(p) === squash(label)) ||
        (holder && squash(holder).startsWith(squash(p)) && squash(p).length > 1),
    );
    if (part && named(part)) return named(part);
  }
  return holder;
}
