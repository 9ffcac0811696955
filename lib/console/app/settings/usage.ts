import { api } from "../api.js";
import type { Usage } from "../api-types.js";
import { fill, h, humanize, when } from "../dom.js";
import type { Feedback } from "../feedback.js";

type Quota = Usage["quotas"][keyof Usage["quotas"]];

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

/** One quota: what is used of its limit, and a bar. */
function quotaRow(kind: string, quota: Quota): HTMLElement {
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
}

export interface UsagePanel {
  el: HTMLElement;
  load(): Promise<void>;
}

/** Usage today: one row per quota, and when they reset. */
export function usagePanel(feedback: Feedback): UsagePanel {
  const rows = h("ul", { class: "usage", "aria-label": "Quotas" });
  const resets = h("p", { class: "muted" });
  return {
    el: h(
      "section",
      { class: "panel", "aria-labelledby": "usage-title" },
      h("h3", { id: "usage-title" }, "Usage today"),
      resets,
      rows,
    ),
    async load() {
      const usage = await feedback.attempt(() => api<Usage>("GET", "api/usage"));
      if (!usage) return;
      const quotas = Object.entries(usage.quotas);
      const first = quotas[0]?.[1];
      fill(
        resets,
        `Day ${usage.day} (UTC)`,
        first ? `, resets ${when(first.resetsAt)}` : "",
        ". Past a limit, that kind of work waits until the reset.",
      );
      fill(
        rows,
        quotas.map(([kind, quota]) => quotaRow(kind, quota)),
      );
    },
  };
}
