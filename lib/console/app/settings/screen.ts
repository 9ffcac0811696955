import { h } from "../dom.js";
import { Feedback } from "../feedback.js";
import type { Screen } from "../screen.js";
import type { Spec } from "../spec.js";
import { brandPanel } from "./brand.js";
import { usagePanel } from "./usage.js";
import { webhooksPanel } from "./webhooks.js";

/** Settings: the brand profile, usage against quotas, and webhooks where the API offers them. */
export function settingsScreen(spec: Spec): Screen {
  const feedback = new Feedback();
  const brand = brandPanel(spec, feedback);
  const usage = usagePanel(feedback);
  const hooks = spec.has("post", "/api/webhooks") ? webhooksPanel(spec, feedback) : null;
  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "settings-title" },
      h("h2", { id: "settings-title" }, "Settings"),
      feedback.el,
      h("div", { class: "split" }, brand.el, h("div", { class: "stack" }, usage.el, hooks?.el)),
    ),
    show: () => {
      void brand.load();
      void usage.load();
      void hooks?.load();
    },
  };
}
