import type { CrawlPage } from "../api-types.js";
import { h } from "../dom.js";

/** A crawl's per-URL report: each page found, what became of it, and why. */
export function crawlReport(pages: CrawlPage[]): HTMLElement {
  if (pages.length === 0) return h("p", { class: "muted" }, "No pages yet.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      null,
      h("caption", null, "Pages of the crawl"),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          h("th", { scope: "col" }, "URL"),
          h("th", { scope: "col" }, "Result"),
          h("th", { scope: "col" }, "Why"),
        ),
      ),
      h(
        "tbody",
        null,
        pages.map((p) =>
          h(
            "tr",
            null,
            h("td", { class: "place" }, p.url),
            h("td", null, h("span", { class: `badge ${p.status}` }, p.status)),
            h(
              "td",
              null,
              [p.reason, p.httpStatus ? `HTTP ${p.httpStatus}` : null, p.message]
                .filter(Boolean)
                .join(" · "),
            ),
          ),
        ),
      ),
    ),
  );
}
