import { api } from "../api.js";
import type { IntelEvent } from "../api-types.js";
import { field, h, link, when } from "../dom.js";
import type { Feedback } from "../feedback.js";
import { kindWord, sectionWord, severityWord } from "../words.js";
import { beforeAfter, changeInNumbers } from "./change.js";

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
      h("span", { class: `badge sev-${e.severity}` }, severityWord(e.severity)),
      h("strong", null, e.title),
    ),
    h(
      "p",
      { class: "muted" },
      h("a", { href: `#/competitor?id=${encodeURIComponent(e.competitorId)}` }, e.competitorDomain),
      ` · ${sectionWord(e.type)}: ${kindWord(e.change.kind)} · ${when(e.detectedAt)}`,
      e.change.url ? [" · ", link(e.change.url, "Open the page")] : null,
    ),
    h("p", { class: "numbers" }, changeInNumbers(e.change)),
    h("p", null, e.aiBrief),
    e.change.before || e.change.after
      ? h("details", null, h("summary", null, "Before and after"), beforeAfter(e.change))
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
