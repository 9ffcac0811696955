import { api } from "../api.js";
import type { Generated } from "../api-types.js";
import { field, fill, h, humanize, select } from "../dom.js";
import { busy, type Feedback } from "../feedback.js";
import { type SchemaForm, schemaForm } from "../schema-form.js";
import type { Spec } from "../spec.js";
import type { ArtifactsPanel } from "./artifacts.js";
import type { OutputPanel } from "./output.js";

export const GENERATE = "/api/intel/{module}";

/** Generates intel: a module, the form of its inputs from its schema, and its answer shown. */
export function generateForm(
  spec: Spec,
  modules: string[],
  feedback: Feedback,
  output: OutputPanel,
  artifacts: ArtifactsPanel,
): HTMLFormElement {
  const picker = select(modules.map((m) => [m, humanize(m)]));
  const formSlot = h("div");
  const generate = h("button", { type: "submit" }, "Generate");
  let inputs: SchemaForm | undefined;

  const showInputs = () => {
    const schema = spec.bodyVariant("post", GENERATE, picker.value);
    inputs = schema
      ? schemaForm(spec, schema, {
          hints: { save: "Also keep the result in your library of saved artifacts." },
        })
      : undefined;
    fill(formSlot, inputs?.el ?? h("p", { class: "muted" }, "This module takes no inputs."));
  };
  picker.addEventListener("change", showInputs);

  const form = h(
    "form",
    { class: "panel", "aria-label": "Generate intel" },
    h("h3", null, "Generate"),
    field("Module", picker),
    formSlot,
    h("div", { class: "actions" }, generate),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const module = picker.value;
    feedback.say("Generating…");
    const answer = await busy(generate, () =>
      feedback.run(() =>
        api<Generated>("POST", `api/intel/${module}`, { body: inputs?.value() ?? {} }),
      ),
    );
    if (answer) output.show(answer, () => artifacts.load());
  });
  showInputs();
  return form;
}
