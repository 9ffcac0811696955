import { api } from "./api.js";
import { type Citation, renderDocument } from "./document.js";
import { field, fill, h, select, when } from "./dom.js";
import { busy, Feedback } from "./feedback.js";
import { type SchemaForm, schemaForm } from "./schema-form.js";
import type { Screen } from "./screen.js";
import type { Spec } from "./spec.js";

interface Artifact {
  id?: string;
  module: string;
  title: string;
  inputs?: Record<string, unknown>;
  output: unknown;
  citations: Citation[];
  createdAt?: string;
}

interface Generated {
  module: string;
  output: unknown;
  citations: Citation[];
  artifact: Artifact;
  /** Set when the request asked to save in one step. */
  artifactId?: string;
  /** What the model's answer fell short of (it is kept). */
  warnings?: string[];
}

interface Summary {
  id: string;
  module: string;
  title: string;
  createdAt: string;
}

const GENERATE = "/api/intel/{module}";

/** Intel: a form per module from its schema, the output as a document, saving, and the artifacts. */
export function intelScreen(spec: Spec): Screen {
  const modules = spec.pathEnum("post", GENERATE, "module");
  const feedback = new Feedback();
  const picker = select(modules.map((m) => [m, m]));
  const formSlot = h("div");
  const generate = h("button", { type: "submit" }, "Generate");
  const output = h("div", { class: "output" });
  let form: SchemaForm | undefined;

  const showForm = () => {
    const schema = spec.bodyVariant("post", GENERATE, picker.value);
    form = schema ? schemaForm(spec, schema) : undefined;
    fill(formSlot, form?.el ?? h("p", { class: "muted" }, "This module takes no inputs."));
  };
  picker.addEventListener("change", showForm);

  const generator = h(
    "form",
    { class: "panel", "aria-label": "Generate intel" },
    h("h3", null, "Generate"),
    field("Module", picker),
    formSlot,
    h("div", { class: "actions" }, generate),
  );
  generator.addEventListener("submit", async (event) => {
    event.preventDefault();
    const module = picker.value;
    feedback.say("Generating…");
    const answer = await busy(generate, () =>
      feedback.run(() =>
        api<Generated>("POST", `api/intel/${module}`, { body: form?.value() ?? {} }),
      ),
    );
    if (answer) showGenerated(answer);
  });

  function showGenerated(answer: Generated) {
    const title = h("input", { type: "text", value: answer.artifact.title, maxlength: 200 });
    const save = h("button", { type: "button" }, "Save");
    const saved = h("span", { role: "status", class: "muted" });
    const markSaved = (id: string) => {
      save.disabled = true;
      saved.textContent = `Saved as ${id}`;
    };
    if (answer.artifactId) markSaved(answer.artifactId);
    save.addEventListener("click", async () => {
      const stored = await busy(save, () =>
        feedback.run(() =>
          api<{ id: string }>("POST", "api/artifacts", {
            body: { ...answer.artifact, title: title.value.trim() || answer.artifact.title },
          }),
        ),
      );
      if (stored) {
        markSaved(stored.id);
        await loadArtifacts();
      }
    });
    fill(
      output,
      h("div", { class: "actions" }, field("Title", title), save, saved),
      answer.warnings?.length
        ? h(
            "div",
            { class: "warnings", role: "note" },
            h("strong", null, "Warnings"),
            h(
              "ul",
              null,
              answer.warnings.map((w) => h("li", null, w)),
            ),
          )
        : null,
      renderDocument(answer.artifact.title, answer.output, answer.citations),
    );
    output.querySelector("h2")?.setAttribute("tabindex", "-1");
    (output.querySelector("h2") as HTMLElement | null)?.focus();
  }

  // Saved artifacts, filtered by module.
  const artifacts = h("ul", { class: "cards", "aria-label": "Saved artifacts" });
  const moduleFilter = select([
    ["", "All modules"],
    ...modules.map((m): [string, string] => [m, m]),
  ]);
  const more = h("button", { type: "button", hidden: true }, "Load more");
  let cursor: string | null = null;
  moduleFilter.addEventListener("change", () => void loadArtifacts());
  more.addEventListener("click", () => void loadArtifacts(true));

  async function loadArtifacts(append = false) {
    const page = await feedback.attempt(() =>
      api<{ artifacts: Summary[]; nextCursor: string | null }>("GET", "api/artifacts", {
        query: { module: moduleFilter.value, limit: 20, cursor: append ? cursor : undefined },
      }),
    );
    if (!page) return;
    cursor = page.nextCursor;
    more.hidden = !cursor;
    const items = page.artifacts.map((a) =>
      h(
        "li",
        { class: "card" },
        h(
          "div",
          { class: "card-head" },
          h("strong", null, a.title),
          h("span", { class: "badge" }, a.module),
          h("span", { class: "muted" }, when(a.createdAt)),
        ),
        h(
          "div",
          { class: "actions" },
          h(
            "button",
            {
              type: "button",
              onclick: async () => {
                const full = await feedback.run(() =>
                  api<Artifact>("GET", `api/artifacts/${a.id}`),
                );
                if (full) fill(output, renderDocument(full.title, full.output, full.citations));
              },
            },
            "Open",
          ),
          h(
            "button",
            {
              type: "button",
              class: "danger",
              onclick: async () => {
                if (!confirm(`Delete ${a.title}?`)) return;
                await feedback.run(() => api("DELETE", `api/artifacts/${a.id}`), "Deleted");
                await loadArtifacts();
              },
            },
            "Delete",
          ),
        ),
      ),
    );
    if (append) artifacts.append(...items);
    else fill(artifacts, items.length ? items : h("li", { class: "muted" }, "Nothing saved yet."));
  }

  showForm();
  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "intel-title" },
      h("h2", { id: "intel-title" }, "Intel"),
      feedback.el,
      h(
        "div",
        { class: "split" },
        generator,
        h(
          "section",
          { class: "panel", "aria-label": "Artifacts" },
          h("h3", null, "Saved artifacts"),
          field("Module", moduleFilter),
          artifacts,
          more,
        ),
      ),
      output,
    ),
    show: () => void loadArtifacts(),
  };
}
