import { api } from "../api.js";
import type { AlertRule } from "../api-types.js";
import { field, fill, h, select } from "../dom.js";
import { busy, type Feedback } from "../feedback.js";
import { severityWord } from "../words.js";

/**
 * A competitor's alert rules as a form: which of its changes notify the team (by severity, by
 * the size of a price move, by words), listed with a button to remove each.
 */

const SEVERITY_OPTIONS: Array<[string, string]> = [
  ["", "Any"],
  ...["medium", "high", "critical"].map((s): [string, string] => [
    s,
    `${severityWord(s)} or above`,
  ]),
];

function describe(rule: AlertRule): string {
  const parts = [rule.minSeverity ? `${severityWord(rule.minSeverity)} or above` : "any severity"];
  for (const c of rule.conditions)
    if (c.field === "abs_percent_change") parts.push(`price moves of ${c.value}% or more`);
  if (rule.keywords.length > 0) parts.push(`mentioning ${rule.keywords.join(", ")}`);
  return parts.join(", ");
}

export function rulesPanel(
  competitorId: string,
  feedback: Feedback,
): { el: HTMLElement; load(): Promise<void> } {
  const list = h("ul", { class: "cards", "aria-label": "Alert rules" });
  const name = h("input", { type: "text", required: true, maxlength: 100 });
  const severity = select(SEVERITY_OPTIONS);
  const percent = h("input", { type: "number", min: 0, max: 1000, step: 1 });
  const words = h("input", { type: "text" });
  const add = h("button", { type: "submit" }, "Add alert");
  const form = h(
    "form",
    { class: "rule-form", "aria-label": "New alert" },
    field("Alert name", name),
    field("Severity", severity),
    field("Price moves of at least (%)", percent, "Leave empty to be told of every change."),
    field("Words to watch", words, "Separated by commas, e.g. enterprise, AI"),
    h("div", { class: "actions" }, add),
  );

  async function load() {
    const answer = await feedback.attempt(() =>
      api<{ rules: AlertRule[] }>("GET", "api/intel/alert-rules"),
    );
    if (!answer) return;
    const mine = answer.rules.filter((r) => r.competitorId === competitorId);
    fill(
      list,
      mine.length === 0
        ? h(
            "li",
            { class: "muted" },
            "No alerts for this company: every change notifies while the workspace has no alert at all.",
          )
        : null,
      mine.map((rule) =>
        h(
          "li",
          { class: "card" },
          h("strong", null, rule.name),
          h("p", { class: "muted" }, `Tells you of ${describe(rule)}`),
          h(
            "button",
            {
              type: "button",
              class: "danger",
              onclick: async () => {
                await feedback.run(
                  () => api("DELETE", `api/intel/alert-rules/${rule.id}`),
                  "Alert removed",
                );
                await load();
              },
            },
            `Remove ${rule.name}`,
          ),
        ),
      ),
    );
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      name: name.value.trim(),
      competitorId,
      minSeverity: severity.value || null,
      conditions: percent.value
        ? [{ field: "abs_percent_change", op: ">=", value: Number(percent.value) }]
        : [],
      keywords: words.value
        .split(",")
        .map((w) => w.trim())
        .filter(Boolean),
    };
    const made = await busy(add, () =>
      feedback.run(() => api<AlertRule>("POST", "api/intel/alert-rules", { body }), "Alert added"),
    );
    if (!made) return;
    form.reset();
    await load();
  });

  return {
    el: h(
      "section",
      { class: "panel", "aria-labelledby": "rules-title" },
      h("h3", { id: "rules-title" }, "Alerts"),
      list,
      form,
    ),
    load,
  };
}
