import { api } from "../api.js";
import type { SourceAccepted } from "../api-types.js";
import { field, h, select } from "../dom.js";
import type { Feedback } from "../feedback.js";
import type { Spec } from "../spec.js";
import type { SourcesPanel } from "./sources.js";

/** Adds a web page as a source, with a refresh schedule when the API offers one. */
export function addUrlForm(spec: Spec, feedback: Feedback, sources: SourcesPanel): HTMLFormElement {
  const url = h("input", {
    type: "url",
    required: true,
    placeholder: "https://example.com/pricing",
  });
  const name = h("input", { type: "text", maxlength: 200 });
  const schedules = (spec.body("post", "/api/knowledge").properties?.refresh?.enum ?? [])
    .filter((v) => v !== null)
    .map(String);
  const refresh = select([["", "Never"], ...schedules.map((v): [string, string] => [v, v])]);
  const form = h(
    "form",
    { class: "panel", "aria-label": "Add a web page" },
    h("h3", null, "Add a web page"),
    field("Page URL (required)", url),
    field("Name", name),
    schedules.length > 0 ? field("Refresh", refresh) : null,
    h("button", { type: "submit" }, "Add page"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      url: url.value,
      ...(name.value.trim() ? { name: name.value.trim() } : {}),
      ...(refresh.value ? { refresh: refresh.value } : {}),
    };
    const added = await feedback.run(() => api<SourceAccepted>("POST", "api/knowledge", { body }));
    if (added) {
      // A page the workspace has already is refreshed rather than added twice.
      feedback.say(
        added.created === false ? "Already a source: refreshing it" : "Page added; indexing",
      );
      sources.mark(added.id);
      form.reset();
      await sources.refresh();
    }
  });
  return form;
}
