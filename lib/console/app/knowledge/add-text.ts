import { api } from "../api.js";
import { field, h } from "../dom.js";
import type { Feedback } from "../feedback.js";
import type { SourcesPanel } from "./sources.js";

/** Adds raw text as a source. */
export function addTextForm(feedback: Feedback, sources: SourcesPanel): HTMLFormElement {
  const text = h("textarea", { rows: 4, required: true });
  const name = h("input", { type: "text", maxlength: 200 });
  const form = h(
    "form",
    { class: "panel", "aria-label": "Add text" },
    h("h3", null, "Add text"),
    field("Name", name),
    field("Text (required)", text, "Markdown headings become sections."),
    h("button", { type: "submit" }, "Add text"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      text: text.value,
      ...(name.value.trim() ? { name: name.value.trim() } : {}),
    };
    const added = await feedback.run(
      () => api("POST", "api/knowledge", { body }),
      "Text added; indexing",
    );
    if (added) {
      form.reset();
      await sources.refresh();
    }
  });
  return form;
}
