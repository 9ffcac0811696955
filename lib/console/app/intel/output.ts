import { api } from "../api.js";
import type { Artifact, ArtifactSaved, Generated } from "../api-types.js";
import { renderDocument } from "../document.js";
import { field, fill, h } from "../dom.js";
import { busy, type Feedback } from "../feedback.js";

export interface OutputPanel {
  el: HTMLElement;
  /** A module's answer: its title to edit and save, its warnings, and the document. */
  show(answer: Generated, saved: () => Promise<void>): void;
  /** A saved artifact, as a document. */
  open(artifact: Artifact): void;
}

function warnings(answer: Generated): HTMLElement | null {
  if (!answer.warnings?.length) return null;
  return h(
    "div",
    { class: "warnings", role: "note" },
    h("strong", null, "Warnings"),
    h(
      "ul",
      null,
      answer.warnings.map((w) => h("li", null, w)),
    ),
  );
}

/** Where intel shows: a generated answer with its save action, or an opened artifact. */
export function outputPanel(feedback: Feedback): OutputPanel {
  const el = h("div", { class: "output" });
  return {
    el,
    show(answer, saved) {
      const title = h("input", { type: "text", value: answer.artifact.title, maxlength: 200 });
      const save = h("button", { type: "button" }, "Save");
      const status = h("span", { role: "status", class: "muted" });
      const markSaved = () => {
        save.disabled = true;
        status.textContent = "Saved to your library";
      };
      if (answer.artifactId) markSaved();
      save.addEventListener("click", async () => {
        const stored = await busy(save, () =>
          feedback.run(() =>
            api<ArtifactSaved>("POST", "api/artifacts", {
              body: { ...answer.artifact, title: title.value.trim() || answer.artifact.title },
            }),
          ),
        );
        if (stored) {
          markSaved();
          await saved();
        }
      });
      fill(
        el,
        h("div", { class: "actions" }, field("Title", title), save, status),
        warnings(answer),
        renderDocument(answer.artifact.title, answer.output, answer.citations),
      );
      el.querySelector("h2")?.setAttribute("tabindex", "-1");
      (el.querySelector("h2") as HTMLElement | null)?.focus();
    },
    open(artifact) {
      fill(el, renderDocument(artifact.title, artifact.output, artifact.citations));
    },
  };
}
