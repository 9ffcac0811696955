import { ApiError, api } from "../api.js";
import type { BrandProfile } from "../api-types.js";
import { h } from "../dom.js";
import { busy, type Feedback } from "../feedback.js";
import { schemaForm } from "../schema-form.js";
import type { Spec } from "../spec.js";

export interface BrandPanel {
  el: HTMLElement;
  /** Fills the form with the saved profile. */
  load(): Promise<void>;
}

/** The brand profile, the form from its schema: part of every chat and intel prompt. */
export function brandPanel(spec: Spec, feedback: Feedback): BrandPanel {
  const brand = schemaForm(spec, spec.body("put", "/api/brand"));
  const save = h("button", { type: "submit" }, "Save brand profile");
  const form = h(
    "form",
    { class: "panel", "aria-label": "Brand profile" },
    h("h3", null, "Brand profile"),
    h("p", { class: "muted" }, "Part of every chat and intel prompt."),
    brand.el,
    h("div", { class: "actions" }, save),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await busy(save, () =>
      feedback.run(() => api("PUT", "api/brand", { body: brand.value() }), "Brand profile saved"),
    );
  });
  return {
    el: form,
    async load() {
      try {
        brand.set(await api<BrandProfile>("GET", "api/brand"));
      } catch (err) {
        // No profile yet is the empty form, not an error.
        if (!(err instanceof ApiError && err.status === 404)) feedback.error(err);
      }
    },
  };
}
