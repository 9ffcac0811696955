import { api } from "../api.js";
import type { ChecksQueued, CompetitorCreated } from "../api-types.js";
import { field, h } from "../dom.js";
import { busy, type Feedback } from "../feedback.js";
import type { CompetitorsList } from "./list.js";

/** Every competitor checked at once, in the background: events arrive as the checks finish. */
function checkAllButton(feedback: Feedback): HTMLButtonElement {
  const checkAll = h("button", { type: "button" }, "Check all");
  checkAll.addEventListener("click", async () => {
    const queued = await busy(checkAll, () =>
      feedback.run(() => api<ChecksQueued>("POST", "api/intel/competitors/check-all")),
    );
    if (queued) feedback.say(`${queued.queued} checks queued; new events appear below`);
  });
  return checkAll;
}

/** Tracks a competitor by its domain or a URL; and checks them all. */
export function addCompetitorForm(feedback: Feedback, list: CompetitorsList): HTMLFormElement {
  const domain = h("input", { type: "text", required: true, placeholder: "rival.com" });
  const form = h(
    "form",
    { class: "panel", "aria-label": "Add a competitor" },
    h("h3", null, "Add a competitor"),
    field("Domain or URL (required)", domain),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Add"),
      checkAllButton(feedback),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const added = await feedback.run(
      () =>
        api<CompetitorCreated>("POST", "api/intel/competitors", {
          body: { domain: domain.value.trim() },
        }),
      "Competitor added",
    );
    if (added) {
      form.reset();
      await list.load();
    }
  });
  return form;
}
