import { h } from "../dom.js";
import { Feedback } from "../feedback.js";
import type { Screen } from "../screen.js";
import type { Spec } from "../spec.js";
import { artifactsPanel } from "./artifacts.js";
import { GENERATE, generateForm } from "./generate.js";
import { outputPanel } from "./output.js";

/** Intel: a form per module from its schema, the output as a document, saving, and the artifacts. */
export function intelScreen(spec: Spec): Screen {
  const modules = spec.pathEnum("post", GENERATE, "module");
  const feedback = new Feedback();
  const output = outputPanel(feedback);
  const artifacts = artifactsPanel(modules, feedback, output);
  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "intel-title" },
      h("h2", { id: "intel-title" }, "Intel"),
      feedback.el,
      h(
        "div",
        { class: "split" },
        generateForm(spec, modules, feedback, output, artifacts),
        artifacts.el,
      ),
      output.el,
    ),
    show: () => void artifacts.load(),
  };
}
