import type { Citation } from "./api-types.js";
import { type Child, h, humanize, link, sourceHref, when } from "./dom.js";

/**
 * Structured output (intel, snapshots) as a readable document rather than JSON: keys become
 * headings, lists become bullet lists, objects in lists become titled sections, and `[n]` in text
 * becomes a link to the n-th citation's source.
 */

const MARKER = /\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;

/** Text with its citation markers as numbered links to the cited sources. */
export function cited(text: string, citations: Citation[] = []): Child[] {
  const out: Child[] = [];
  let done = 0;
  for (const match of text.matchAll(MARKER)) {
    out.push(text.slice(done, match.index));
    done = match.index + match[0].length;
    const numbers = (match[1] ?? "").split(",").map((n) => Number(n.trim()));
    out.push(
      h(
        "sup",
        { class: "cite" },
        "[",
        numbers.map((n, i) => {
          const citation = citations[n - 1];
          const label = String(n);
          const a = citation
            ? link(sourceHref(citation.source_id, citation.source_url_or_path), label)
            : label;
          if (citation && typeof a !== "string") a.title = `${citation.name}: ${citation.quote}`;
          return [i > 0 ? ", " : "", a];
        }),
        "]",
      ),
    );
  }
  out.push(text.slice(done));
  return out;
}

/** The numbered list a document's `[n]` point at. */
export function citationList(citations: Citation[]): HTMLElement | null {
  if (citations.length === 0) return null;
  return h(
    "section",
    { class: "citations", "aria-label": "Sources" },
    h("h3", null, "Sources"),
    h(
      "ol",
      null,
      citations.map((c) =>
        h(
          "li",
          null,
          link(sourceHref(c.source_id, c.source_url_or_path), c.name),
          c.quote ? h("q", null, c.quote) : null,
        ),
      ),
    ),
  );
}

const isScalar = (v: unknown) => v === null || typeof v !== "object";
const TITLE_KEYS = ["name", "title", "stage", "phase", "pillar", "metric", "role", "label"];

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

function scalar(value: unknown, citations: Citation[]): Child[] {
  if (typeof value === "string" && ISO_TIME.test(value)) return [when(value)];
  if (typeof value === "string" && /^https?:\/\/\S+$/i.test(value)) return [link(value, value)];
  if (typeof value === "string") return cited(value, citations);
  if (typeof value === "number") return [value.toLocaleString()];
  if (typeof value === "boolean") return [value ? "Yes" : "No"];
  return [];
}

/** A record of a few plain values (a plan, a role, a post): one row of a table. */
const isFlatRecord = (v: unknown): v is Record<string, unknown> =>
  !isScalar(v) &&
  !Array.isArray(v) &&
  Object.keys(v as object).length <= 7 &&
  Object.values(v as object).every(isScalar);

function table(rows: Array<Record<string, unknown>>, citations: Citation[]): HTMLElement {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))].filter((column) =>
    rows.some((row) => row[column] !== null && row[column] !== undefined && row[column] !== ""),
  );
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      null,
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          columns.map((c) => h("th", { scope: "col" }, humanize(c))),
        ),
      ),
      h(
        "tbody",
        null,
        rows.map((row) =>
          h(
            "tr",
            null,
            columns.map((c) => h("td", null, scalar(row[c], citations))),
          ),
        ),
      ),
    ),
  );
}

function heading(level: number, ...children: Child[]): HTMLElement {
  const tag = `h${Math.min(level, 6)}` as "h3";
  return h(tag, null, ...children);
}

export function renderValue(value: unknown, citations: Citation[] = [], level = 3): Child {
  if (value === null || value === undefined || value === "") return null;
  if (isScalar(value)) return h("p", null, scalar(value, citations));
  if (Array.isArray(value)) {
    if (value.length === 0) return h("p", { class: "muted" }, "None");
    if (value.every(isScalar)) {
      return h(
        "ul",
        null,
        value.map((v) => h("li", null, scalar(v, citations))),
      );
    }
    if (value.every(isFlatRecord)) return table(value, citations);
    return value.map((item) => {
      if (isScalar(item) || Array.isArray(item)) return renderValue(item, citations, level);
      const record = item as Record<string, unknown>;
      const titleKey = TITLE_KEYS.find((k) => typeof record[k] === "string");
      const rest = titleKey
        ? Object.fromEntries(Object.entries(record).filter(([k]) => k !== titleKey))
        : record;
      return h(
        "section",
        { class: "doc-item" },
        titleKey ? heading(level, cited(String(record[titleKey]), citations)) : null,
        renderValue(rest, citations, level + 1),
      );
    });
  }
  const entries = Object.entries(value as Record<string, unknown>).filter(
    ([, v]) => v !== null && v !== undefined && v !== "",
  );
  if (entries.every(([, v]) => isScalar(v))) {
    return h(
      "dl",
      null,
      entries.map(([k, v]) => [h("dt", null, humanize(k)), h("dd", null, scalar(v, citations))]),
    );
  }
  return entries.map(([k, v]) =>
    h("section", null, heading(level, humanize(k)), renderValue(v, citations, level + 1)),
  );
}

/** A whole document: a title, its body, and its sources. */
export function renderDocument(
  title: string,
  value: unknown,
  citations: Citation[] = [],
): HTMLElement {
  return h(
    "article",
    { class: "document" },
    h("h2", null, title),
    renderValue(value, citations, 3),
    citationList(citations),
  );
}
