import { uploadFile } from "../api.js";
import { field, h } from "../dom.js";
import type { Feedback } from "../feedback.js";
import { sourceState } from "../words.js";
import type { SourcesPanel } from "./sources.js";

/**
 * Uploads files, one after another with a progress bar each: dropped on the panel, or picked
 * with its (keyboard-reachable) file input.
 */
export function uploadPanel(feedback: Feedback, sources: SourcesPanel): HTMLElement {
  // Each uploaded file's line, by its source, until the source is ready or failed.
  const waiting = new Map<string, HTMLElement>();
  sources.onListed((listed) => {
    for (const source of listed) {
      const state = waiting.get(source.id);
      if (!state) continue;
      state.textContent = sourceState(source.status);
      if (source.status === "indexed" || source.status === "failed") waiting.delete(source.id);
    }
  });
  const files = h("input", { type: "file", multiple: true, class: "file-input" });
  const uploads = h("ul", { class: "uploads", "aria-label": "Uploads" });
  const drop = h(
    "div",
    { class: "drop" },
    h("p", null, "Drop files here, or"),
    field("Choose files", files, "PDF, DOCX, HTML, Markdown, text or CSV; up to 50 MB each."),
  );
  async function send(picked: File[]) {
    for (const file of picked) {
      const bar = h("progress", { max: 100, value: 0, "aria-label": `Upload of ${file.name}` });
      const state = h("span", { class: "muted state" }, "Starting");
      uploads.prepend(h("li", null, h("span", null, file.name), bar, state));
      const done = await feedback.run(() =>
        uploadFile(file, (sent, total) => {
          bar.value = total > 0 ? Math.round((sent / total) * 100) : 100;
          state.textContent = `${bar.value}%`;
        }),
      );
      state.textContent = done ? "Uploaded, being read" : "Failed";
      if (done) waiting.set(done.id, state);
      await sources.refresh();
    }
  }
  files.addEventListener("change", () => {
    void send([...(files.files ?? [])]);
    files.value = "";
  });
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    void send([...(event.dataTransfer?.files ?? [])]);
  });
  return h(
    "section",
    { class: "panel", "aria-label": "Upload files" },
    h("h3", null, "Upload files"),
    drop,
    uploads,
  );
}
