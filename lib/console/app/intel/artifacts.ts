import { api } from "../api.js";
import type { Artifact, ArtifactPage, ArtifactSummary } from "../api-types.js";
import { field, fill, h, humanize, select, when } from "../dom.js";
import { downloadExport } from "../exports.js";
import type { Feedback } from "../feedback.js";
import type { OutputPanel } from "./output.js";

export interface ArtifactsPanel {
  el: HTMLElement;
  /** Lists the saved artifacts (again, or their next page). */
  load(append?: boolean): Promise<void>;
}

/** One saved artifact: open it as a document, download it as Markdown or DOCX, or delete it. */
function artifactCard(
  a: ArtifactSummary,
  feedback: Feedback,
  output: OutputPanel,
  artifacts: ArtifactsPanel,
): HTMLElement {
  const open = async () => {
    const full = await feedback.run(() => api<Artifact>("GET", `api/artifacts/${a.id}`));
    if (full) output.open(full);
  };
  const save = (format: "md" | "docx") =>
    feedback.run(() => downloadExport(`api/artifacts/${a.id}/export`, a.title, format));
  const remove = async () => {
    if (!confirm(`Delete ${a.title}?`)) return;
    await feedback.run(() => api("DELETE", `api/artifacts/${a.id}`), "Deleted");
    await artifacts.load();
  };
  return h(
    "li",
    { class: "card" },
    h(
      "div",
      { class: "card-head" },
      h("strong", null, a.title),
      h("span", { class: "badge" }, humanize(a.module)),
      h("span", { class: "muted" }, when(a.createdAt)),
    ),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", onclick: open }, "Open"),
      h("button", { type: "button", onclick: () => save("md") }, "Download (Markdown)"),
      h("button", { type: "button", onclick: () => save("docx") }, "Download (Word)"),
      h("button", { type: "button", class: "danger", onclick: remove }, "Delete"),
    ),
  );
}

/** Saved artifacts, filtered by module: open one as a document, or delete it. */
export function artifactsPanel(
  modules: string[],
  feedback: Feedback,
  output: OutputPanel,
): ArtifactsPanel {
  const list = h("ul", { class: "cards", "aria-label": "Saved artifacts" });
  const moduleFilter = select([
    ["", "All modules"],
    ...modules.map((m): [string, string] => [m, m]),
  ]);
  const more = h("button", { type: "button", hidden: true }, "Load more");
  let cursor: string | null = null;

  const panel: ArtifactsPanel = {
    el: h(
      "section",
      { class: "panel", "aria-label": "Artifacts" },
      h("h3", null, "Saved artifacts"),
      field("Module", moduleFilter),
      list,
      more,
    ),
    async load(append = false) {
      const page = await feedback.attempt(() =>
        api<ArtifactPage>("GET", "api/artifacts", {
          query: { module: moduleFilter.value, limit: 20, cursor: append ? cursor : undefined },
        }),
      );
      if (!page) return;
      cursor = page.nextCursor;
      more.hidden = !cursor;
      const items = page.artifacts.map((a) => artifactCard(a, feedback, output, panel));
      if (append) list.append(...items);
      else fill(list, items.length ? items : h("li", { class: "muted" }, "Nothing saved yet."));
    },
  };
  moduleFilter.addEventListener("change", () => void panel.load());
  more.addEventListener("click", () => void panel.load(true));

  return panel;
}
