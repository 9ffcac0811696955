import { api } from "../api.js";
import type { Deliveries, Webhook, WebhookCreated, WebhookPage } from "../api-types.js";
import { renderValue } from "../document.js";
import { fill, h } from "../dom.js";
import type { Feedback } from "../feedback.js";
import { schemaForm } from "../schema-form.js";
import type { Spec } from "../spec.js";

export interface WebhooksPanel {
  el: HTMLElement;
  load(): Promise<void>;
}

/** What a webhook's card can do, as far as the API lets it. */
interface CardDeps {
  feedback: Feedback;
  hooks: WebhooksPanel;
  canTest: boolean;
  canLog: boolean;
}

/** One endpoint: its events, a test event, its delivery log, and removing it. */
function webhookCard(w: Webhook, { feedback, hooks, canTest, canLog }: CardDeps): HTMLElement {
  const log = h("div", { class: "report" });
  const showLog = async () => {
    const attempts = await feedback.run(() =>
      api<Deliveries>("GET", `api/webhooks/${w.id}/deliveries`),
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
  const test = async () => {
    await feedback.run(() => api("POST", `api/webhooks/${w.id}/test`), "Test event queued");
    await showLog();
  };
  const remove = async () => {
    await feedback.run(() => api("DELETE", `api/webhooks/${w.id}`), "Webhook removed");
    await hooks.load();
  };
  return h(
    "li",
    { class: "card" },
    h("div", { class: "card-head" }, h("strong", { class: "place" }, w.url)),
    w.events ? h("p", { class: "muted" }, w.events.join(", ")) : null,
    h(
      "div",
      { class: "actions" },
      canTest ? h("button", { type: "button", onclick: test }, "Send test event") : null,
      canLog ? h("button", { type: "button", onclick: showLog }, "Delivery log") : null,
      h("button", { type: "button", class: "danger", onclick: remove }, "Remove"),
    ),
    log,
  );
}

/** Webhooks, once the API has them: the form comes from the create operation's schema. */
export function webhooksPanel(spec: Spec, feedback: Feedback): WebhooksPanel {
  const canTest = spec.has("post", "/api/webhooks/{id}/test");
  const canLog = spec.has("get", "/api/webhooks/{id}/deliveries");
  const form = schemaForm(spec, spec.body("post", "/api/webhooks"));
  const list = h("ul", { class: "cards", "aria-label": "Webhooks" });
  const secret = h("p", { role: "status" });
  const create = h("form", null, form.el, h("button", { type: "submit" }, "Add webhook"), secret);

  const hooks: WebhooksPanel = {
    el: h(
      "section",
      { class: "panel", "aria-label": "Webhooks" },
      h("h3", null, "Webhooks"),
      create,
      list,
    ),
    async load() {
      const page = await feedback.attempt(() => api<WebhookPage>("GET", "api/webhooks"));
      if (!page) return;
      const deps = { feedback, hooks, canTest, canLog };
      fill(
        list,
        page.webhooks.map((w) => webhookCard(w, deps)),
      );
    },
  };
  create.addEventListener("submit", async (event) => {
    event.preventDefault();
    const made = await feedback.run(() =>
      api<WebhookCreated>("POST", "api/webhooks", { body: form.value() }),
    );
    if (!made) return;
    fill(
      secret,
      made.secret
        ? ["Signing secret (shown once): ", h("code", null, made.secret)]
        : "Webhook added",
    );
    await hooks.load();
  });
  return hooks;
}
