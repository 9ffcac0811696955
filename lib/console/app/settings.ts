import { ApiError, api } from "./api.js";
import { renderValue } from "./document.js";
import { fill, h } from "./dom.js";
import { busy, Feedback } from "./feedback.js";
import { schemaForm } from "./schema-form.js";
import type { Screen } from "./screen.js";
import type { Spec } from "./spec.js";

interface Webhook {
  id: string;
  url: string;
  events?: string[];
  secret?: string;
  [more: string]: unknown;
}

/** Settings: the brand profile, usage against quotas and webhooks where the API offers them. */
export function settingsScreen(spec: Spec): Screen {
  const feedback = new Feedback();
  const brand = schemaForm(spec, spec.body("put", "/api/brand"));
  const saveBrand = h("button", { type: "submit" }, "Save brand profile");
  const brandForm = h(
    "form",
    { class: "panel", "aria-label": "Brand profile" },
    h("h3", null, "Brand profile"),
    h("p", { class: "muted" }, "Part of every chat and intel prompt."),
    brand.el,
    h("div", { class: "actions" }, saveBrand),
  );
  brandForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    await busy(saveBrand, () =>
      feedback.run(() => api("PUT", "api/brand", { body: brand.value() }), "Brand profile saved"),
    );
  });

  async function loadBrand() {
    try {
      brand.set(await api<Record<string, unknown>>("GET", "api/brand"));
    } catch (err) {
      // No profile yet is the empty form, not an error.
      if (!(err instanceof ApiError && err.status === 404)) feedback.error(err);
    }
  }

  // Usage against quotas, from whichever usage endpoint the API has.
  const usagePath = spec.paths(/^\/api\/(usage|quotas?|limits)$/)[0];
  const usage = h("div");
  const usagePanel = h(
    "section",
    { class: "panel", "aria-label": "Usage" },
    h("h3", null, "Usage and quotas"),
    usage,
  );
  async function loadUsage() {
    if (!usagePath) {
      fill(
        usage,
        h(
          "p",
          { class: "muted" },
          "This API does not report usage yet. Daily quotas apply per workspace: crawl pages, uploaded bytes, model calls and competitor checks; a spent quota answers ",
          h("code", null, "quota_exceeded"),
          ".",
        ),
      );
      return;
    }
    const answer = await feedback.attempt(() => api(`GET`, usagePath.slice(1)));
    if (answer) fill(usage, renderValue(answer));
  }

  // Webhooks, once the API has them: the form comes from the create operation's schema.
  const hooks = spec.has("post", "/api/webhooks") ? webhooksPanel(spec, feedback) : null;

  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "settings-title" },
      h("h2", { id: "settings-title" }, "Settings"),
      feedback.el,
      h("div", { class: "split" }, brandForm, h("div", null, usagePanel, hooks?.el)),
    ),
    show: () => {
      void loadBrand();
      void loadUsage();
      void hooks?.load();
    },
  };
}

function webhooksPanel(spec: Spec, feedback: Feedback) {
  const canTest = spec.has("post", "/api/webhooks/{id}/test");
  const canLog = spec.has("get", "/api/webhooks/{id}/deliveries");
  const form = schemaForm(spec, spec.body("post", "/api/webhooks"));
  const list = h("ul", { class: "cards", "aria-label": "Webhooks" });
  const secret = h("p", { role: "status" });
  const create = h("form", null, form.el, h("button", { type: "submit" }, "Add webhook"), secret);
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    const made = await feedback.run(() =>
      api<Webhook>("POST", "api/webhooks", { body: form.value() }),
    );
    if (!made) return;
    fill(
      secret,
      made.secret
        ? ["Signing secret (shown once): ", h("code", null, made.secret)]
        : "Webhook added",
    );
    await load();
  });
  async function load() {
    const page = await feedback.attempt(() => api<{ webhooks: Webhook[] }>("GET", "api/webhooks"));
    if (!page) return;
    fill(
      list,
      page.webhooks.map((w) => {
        const log = h("div", { class: "report" });
        const showLog = async () => {
          const attempts = await feedback.run(() =>
            api<{ deliveries: Array<Record<string, unknown>> }>(
              "GET",
              `api/webhooks/${w.id}/deliveries`,
            ),
          );
          if (attempts) {
            fill(
              log,
              attempts.deliveries.length > 0
                ? renderValue(attempts.deliveries)
                : h("p", { class: "muted" }, "No deliveries yet."),
            );
          }
        };
        return h(
          "li",
          { class: "card" },
          h("div", { class: "card-head" }, h("strong", { class: "place" }, w.url)),
          w.events ? h("p", { class: "muted" }, w.events.join(", ")) : null,
          h(
            "div",
            { class: "actions" },
            canTest
              ? h(
                  "button",
                  {
                    type: "button",
                    onclick: async () => {
                      await feedback.run(
                        () => api("POST", `api/webhooks/${w.id}/test`),
                        "Test event queued",
                      );
                      await showLog();
                    },
                  },
                  "Send test event",
                )
              : null,
            canLog ? h("button", { type: "button", onclick: showLog }, "Delivery log") : null,
            h(
              "button",
              {
                type: "button",
                class: "danger",
                onclick: async () => {
                  await feedback.run(
                    () => api("DELETE", `api/webhooks/${w.id}`),
                    "Webhook removed",
                  );
                  await load();
                },
              },
              "Remove",
            ),
          ),
          log,
        );
      }),
    );
  }
  return {
    el: h(
      "section",
      { class: "panel", "aria-label": "Webhooks" },
      h("h3", null, "Webhooks"),
      create,
      list,
    ),
    load,
  };
}
