import { ApiError, api } from "../api.js";
import type { BrandProfile, CompetitorPage } from "../api-types.js";
import { fill, h } from "../dom.js";
import { busy, type Feedback } from "../feedback.js";
import { schemaForm } from "../schema-form.js";
import type { Spec } from "../spec.js";

export interface BrandPanel {
  el: HTMLElement;
  /** Fills the form with the saved profile. */
  load(): Promise<void>;
}

/** `https://www.Rival.com/en` → "rival.com": how a profile's entry is compared with a tracked domain. */
const site = (text: string) =>
  text
    .toLowerCase()
    .replace(/^(https?:\/\/)?(www\.)?/, "")
    .replace(/\/.*/, "");

/**
 * The profile's competitors, each a link to its page when tracked (the same domain, or the name
 * its site states, case aside), else a link to the add form filled with it.
 */
async function yourCompetitors(el: HTMLElement, names: string[], feedback: Feedback) {
  const page =
    names.length > 0 &&
    (await feedback.attempt(() =>
      api<CompetitorPage>("GET", "api/intel/competitors", { query: { limit: 100 } }),
    ));
  fill(
    el,
    names.length > 0 && h("h4", null, "Your competitors"),
    h(
      "ul",
      { "aria-label": "Your competitors" },
      names.map((name) => {
        const tracked = page
          ? page.competitors.find((c) =>
              [c.domain, c.companyName].some((v) => v && site(v) === site(name)),
            )
          : undefined;
        return h(
          "li",
          null,
          tracked
            ? h("a", { href: `#/competitor?id=${tracked.id}` }, name)
            : [
                name,
                " · ",
                h(
                  "a",
                  { href: `#/competitors?track=${encodeURIComponent(name)}` },
                  "Track this competitor",
                ),
              ],
        );
      }),
    ),
  );
}

/**
 * The brand profile, the form from its schema: part of every chat and intel prompt. Its
 * competitors follow, linked to the tracked ones.
 */
export function brandPanel(spec: Spec, feedback: Feedback): BrandPanel {
  const brand = schemaForm(spec, spec.body("put", "/api/brand"));
  const save = h("button", { type: "submit" }, "Save brand profile");
  const rivals = h("div");
  const show = (profile: BrandProfile) =>
    yourCompetitors(rivals, profile.competitors ?? [], feedback);
  const form = h(
    "form",
    { class: "panel", "aria-label": "Brand profile" },
    h("h3", null, "Brand profile"),
    h("p", { class: "muted" }, "Part of every chat and intel prompt."),
    brand.el,
    h("div", { class: "actions" }, save),
    rivals,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const saved = await busy(save, () =>
      feedback.run(
        () => api<BrandProfile>("PUT", "api/brand", { body: brand.value() }),
        "Brand profile saved",
      ),
    );
    if (saved) await show(saved);
  });
  return {
    el: form,
    async load() {
      try {
        const profile = await api<BrandProfile>("GET", "api/brand");
        brand.set(profile);
        await show(profile);
      } catch (err) {
        // No profile yet is the empty form, not an error.
        if (!(err instanceof ApiError && err.status === 404)) feedback.error(err);
      }
    },
  };
}
