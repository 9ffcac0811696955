import { h } from "../dom.js";
import { Feedback } from "../feedback.js";
import type { Screen } from "../screen.js";
import type { Spec } from "../spec.js";
import { addCompetitorForm } from "./add-form.js";
import { eventsPanel } from "./events.js";
import { competitorsList } from "./list.js";
import { snapshotPanel } from "./snapshot.js";

/**
 * Competitors: add, check now, the latest snapshot, and the events feed. `#/competitors?track=…`
 * (a brand profile's competitor not tracked yet) opens it with the add form filled.
 */
export function competitorsScreen(spec: Spec): Screen {
  const feedback = new Feedback();
  const snapshot = snapshotPanel(feedback);
  const events = eventsPanel(spec, feedback);
  const list = competitorsList(feedback, snapshot, events);
  const add = addCompetitorForm(feedback, list);
  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "competitors-title" },
      h("h2", { id: "competitors-title" }, "Competitors"),
      feedback.el,
      h("div", { class: "split" }, h("div", null, add, list.el), snapshot.el),
      h("h3", null, "Events"),
      events.els,
    ),
    show: (params) => {
      const track = params.get("track");
      const domain = add.querySelector("input");
      if (track && domain) {
        domain.value = track;
        domain.focus();
      }
      void list.load().then(() => events.load());
    },
  };
}
