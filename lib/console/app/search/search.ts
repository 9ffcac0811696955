import { api } from "../api.js";
import type { SearchAnswer, SearchResult } from "../api-types.js";
import { field, fill, h, link, sourceHref } from "../dom.js";
import { busy, Feedback } from "../feedback.js";

/** One ranked passage: its source, its score, where in the source it is, and its text. */
function hitCard(hit: SearchResult): HTMLElement {
  return h(
    "li",
    { class: "card hit" },
    h(
      "div",
      { class: "card-head" },
      link(sourceHref(hit.source_id, hit.source_url_or_path), hit.name),
      h("span", { class: "score", title: "Relevance, 0 to 1" }, `score ${hit.score.toFixed(3)}`),
    ),
    hit.heading || hit.page
      ? h(
          "p",
          { class: "muted" },
          [hit.heading, hit.page ? `page ${hit.page}` : null].filter(Boolean).join(" · "),
        )
      : null,
    h("p", null, hit.text),
  );
}

export interface SearchPanel {
  el: HTMLElement;
  focus(): void;
}

/** Search: ranked passages with their source and score. */
export function searchPanel(): SearchPanel {
  const feedback = new Feedback();
  const query = h("input", { type: "search", required: true, maxlength: 2000 });
  const submit = h("button", { type: "submit" }, "Search");
  const results = h("ol", { class: "cards results", "aria-label": "Search results" });
  const form = h(
    "form",
    { class: "panel", role: "search" },
    h("h3", null, "Search the knowledge base"),
    h("div", { class: "row" }, field("Query", query), submit),
    feedback.el,
    results,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = await busy(submit, () =>
      feedback.run(() =>
        api<SearchAnswer>("POST", "api/knowledge/search", {
          body: { query: query.value, limit: 10 },
        }),
      ),
    );
    if (!answer) return;
    feedback.say(`${answer.results.length} passages`);
    fill(results, answer.results.map(hitCard));
  });
  return { el: form, focus: () => query.focus() };
}
