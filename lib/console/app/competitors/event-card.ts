import { api } from "../api.js";
import type { IntelEvent } from "../api-types.js";
import { renderValue } from "../document.js";
import { field, h, link, when } from "../dom.js";
import type { Feedback } from "../feedback.js";

/** One change event: its severity, the brief, before and after, and its read/actioned marks. */
export function eventCard(e: IntelEvent, feedback: Feedback): HTMLElement {
  const read = h("input", { type: "checkbox", checked: e.isRead });
  const actioned = h("input", { type: "checkbox", checked: e.isActioned });
  const card = h(
    "li",
    { class: `card event${e.isRead ? "" : " unread"}`, "data-severity": e.severity },
    h(
      "div",
      { class: "card-head" },
      h("span", { class: `badge sev-${e.severity}` }, e.severity),
      h("strong", null, e.title),
    ),
    h(
      "p",
      { class: "muted" },
      `${e.competitorDomain ?? e.competitorId} · ${e.type} · ${when(e.detectedAt)}`,
      e.details.url ? [" · ", link(e.details.url, "page")] : null,
    ),
    h("p", null, e.aiBrief),
    e.details.before !== undefined || e.details.after !== undefined
      ? h(
          "details",
          null,
          h("summary", null, "Before and after"),
          renderValue({ before: e.details.before, after: e.details.after }),
        )
      : null,
    h("div", { class: "actions" }, field("Read", read), field("Actioned", actioned)),
  );
  // A mark is saved as it is ticked, and put back if the API refuses it.
  const saveOn = (box: HTMLInputElement, name: "isRead" | "isActioned") =>
    box.addEventListener("change", async () => {
      const done = await feedback.run(() =>
        api<IntelEvent>("PATCH", `api/intel/events/${e.id}`, { body: { [name]: box.checked } }),
      );
      if (done) e[name] = box.checked;
      else box.checked = e[name];
      card.classList.toggle("unread", !e.isRead);
    });
  saveOn(read, "isRead");
  saveOn(actioned, "isActioned");
  return card;
}
