import { ApiError, api } from "./api.js";
import { renderValue } from "./document.js";
import { fill, h, humanize, when } from "./dom.js";
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

interface QuotaUsage {
  used: number;
  limit: number;
  remaining: number;
  resetsAt: string;
}

/** `GET /api/usage`: today's (UTC) usage of each daily quota. */
interface Usage {
  day: string;
  quotas: Record<string, QuotaUsage>;
}

/** Settings: the brand profile, usage against quotas, and webhooks where the API offers them. */
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

  const usage = usagePanel(feedback);

  // Webhooks, once the API has them: the form comes from the create operation's schema.
  const hooks = spec.has("post", "/api/webhooks") ? webhooksPanel(spec, feedback) : null;

  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "settings-title" },
      h("h2", { id: "settings-title" }, "Settings"),
      feedback.el,
      h("div", { class: "split" }, brandForm, h("div", { class: "stack" }, usage.el, hooks?.el)),
    ),
    show: () => {
      void loadBrand();
      void usage.load();
      void hooks?.load();
    },
  };
}

/** 1536 → "1.5 KB": upload quotas are counted in bytes. */
function bytes(n: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let unit = 0;
  let value = n;
  // Rounded first, so that 1 GB less a few bytes reads "1 GB", not "1,024 MB".
  while (Math.round(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit > 0 && value < 10 ? 1 : 0;
  return `${Number(value.toFixed(digits)).toLocaleString()} ${units[unit]}`;
}

/** Usage today: one row per quota with what is used of its limit, a bar, and when they reset. */
function usagePanel(feedback: Feedback) {
  const rows = h("ul", { class: "usage", "aria-label": "Quotas" });
  const resets = h("p", { class: "muted" });
  async function load() {
    const usage = await feedback.attempt(() => api<Usage>("GET", "api/usage"));
    if (!usage) return;
    const quotas = Object.entries(usage.quotas);
    const first = quotas[0]?.[1];
    fill(
      resets,
      `Day ${usage.day} (UTC)`,
      first ? `, resets ${when(first.resetsAt)}` : "",
      ". Work past a limit is refused with ",
      h("code", null, "quota_exceeded"),
      ".",
    );
    fill(
      rows,
      quotas.map(([kind, quota]) => {
        const label = humanize(kind);
        const amount = kind.endsWith("_bytes") ? bytes : (n: number) => n.toLocaleString();
        const share = quota.limit > 0 ? quota.used / quota.limit : 1;
        return h(
          "li",
          { "data-quota": kind, class: share >= 1 ? "spent" : share >= 0.8 ? "near" : null },
          h(
            "div",
            { class: "card-head" },
            h("strong", null, label),
            h(
              "span",
              { class: "amount" },
              `${amount(quota.used)} / ${amount(quota.limit)} · ${amount(quota.remaining)} left`,
            ),
          ),
          h("progress", {
            max: Math.max(quota.limit, 1),
            value: Math.min(quota.used, quota.limit),
            "aria-label": `${label} used today`,
            "aria-valuetext": `${amount(quota.used)} of ${amount(quota.limit)}`,
          }),
        );
      }),
    );
  }
  return {
    el: h(
      "section",
      { class: "panel", "aria-labelledby": "usage-title" },
      h("h3", { id: "usage-title" }, "Usage today"),
      resets,
      rows,
    ),
    load,
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
