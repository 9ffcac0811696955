import { api } from "./api.js";
import { renderDocument, renderValue } from "./document.js";
import { field, fill, h, link, when } from "./dom.js";
import { busy, Feedback } from "./feedback.js";
import { filtersFor } from "./filters.js";
import type { Screen } from "./screen.js";
import type { Spec } from "./spec.js";

interface Competitor {
  id: string;
  domain: string;
  name: string;
  homepage?: string | null;
  lastAnalyzedAt: string | null;
  [more: string]: unknown;
}

interface IntelEvent {
  id: string;
  competitorId: string;
  competitorDomain?: string;
  type: string;
  severity: string;
  title: string;
  aiBrief: string;
  details: { before?: unknown; after?: unknown; url?: string | null };
  isRead: boolean;
  isActioned: boolean;
  detectedAt: string;
}

/** A competitor's record fields; anything else the API returns is its snapshot. */
const RECORD = new Set(["id", "domain", "name", "homepage", "createdAt", "lastAnalyzedAt"]);

/** Competitors: add, check now, the latest snapshot, and the events feed. */
export function competitorsScreen(spec: Spec): Screen {
  const feedback = new Feedback();
  let competitors: Competitor[] = [];
  const list = h("ul", { class: "cards", "aria-label": "Competitors" });
  const snapshot = h("div", { class: "output" });

  const domain = h("input", { type: "text", required: true, placeholder: "rival.com" });
  // Every competitor at once, in the background: events arrive as the checks finish.
  const checkAll = h("button", { type: "button" }, "Check all");
  checkAll.addEventListener("click", async () => {
    const queued = await busy(checkAll, () =>
      feedback.run(() => api<{ queued: number }>("POST", "api/intel/competitors/check-all")),
    );
    if (queued) feedback.say(`${queued.queued} checks queued; new events appear below`);
  });
  const addForm = h(
    "form",
    { class: "panel", "aria-label": "Add a competitor" },
    h("h3", null, "Add a competitor"),
    field("Domain or URL (required)", domain),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add"), checkAll),
  );
  addForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const added = await feedback.run(
      () =>
        api<Competitor>("POST", "api/intel/competitors", { body: { domain: domain.value.trim() } }),
      "Competitor added",
    );
    if (added) {
      addForm.reset();
      await loadCompetitors();
    }
  });

  async function loadCompetitors() {
    const page = await feedback.attempt(() =>
      api<{ competitors: Competitor[] }>("GET", "api/intel/competitors", { query: { limit: 100 } }),
    );
    if (!page) return;
    competitors = page.competitors;
    filters.refresh();
    fill(
      list,
      competitors.length === 0 ? h("li", { class: "muted" }, "No competitors tracked yet.") : null,
      competitors.map((c) => {
        const check = h("button", { type: "button" }, "Check now");
        check.addEventListener("click", async () => {
          feedback.say(`Checking ${c.domain}…`);
          const answer = await busy(check, () =>
            feedback.run(() =>
              api<{ result: { ok: boolean; changed: boolean; summary: string } }>(
                "POST",
                `api/intel/competitors/${c.id}/check`,
              ),
            ),
          );
          if (answer) feedback.say(`${c.domain}: ${answer.result.summary}`);
          await Promise.all([loadCompetitors(), loadEvents()]);
        });
        return h(
          "li",
          { class: "card", "data-competitor": c.domain },
          h(
            "div",
            { class: "card-head" },
            h("strong", null, c.domain),
            h("span", { class: "muted" }, `last checked ${when(c.lastAnalyzedAt)}`),
          ),
          h(
            "div",
            { class: "actions" },
            check,
            h("button", { type: "button", onclick: () => showSnapshot(c.id) }, "Snapshot"),
            h(
              "button",
              {
                type: "button",
                class: "danger",
                onclick: async () => {
                  if (!confirm(`Stop tracking ${c.domain}?`)) return;
                  await feedback.run(
                    () => api("DELETE", `api/intel/competitors/${c.id}`),
                    "Removed",
                  );
                  await loadCompetitors();
                },
              },
              "Remove",
            ),
          ),
        );
      }),
    );
  }

  async function showSnapshot(id: string) {
    const competitor = await feedback.run(() =>
      api<Competitor>("GET", `api/intel/competitors/${id}`),
    );
    if (!competitor) return;
    const state = Object.fromEntries(
      Object.entries(competitor).filter(([k, v]) => !RECORD.has(k) && v !== null),
    );
    fill(
      snapshot,
      Object.keys(state).length > 0
        ? renderDocument(`${competitor.domain}: latest snapshot`, state)
        : h(
            "article",
            { class: "document" },
            h("h2", null, `${competitor.domain}`),
            h(
              "p",
              { class: "muted" },
              `Last checked ${when(competitor.lastAnalyzedAt)}. The API does not expose snapshot details for it yet; its events below show what changed.`,
            ),
          ),
    );
  }

  // The events feed, newest first, with the API's own filters.
  const events = h("ul", { class: "cards", "aria-label": "Events" });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  let cursor: string | null = null;
  const filters = filtersFor(spec, "/api/intel/events", () => void loadEvents(), {
    competitorId: () => competitors.map((c): [string, string] => [c.id, c.domain]),
  });
  more.addEventListener("click", () => void loadEvents(true));

  async function loadEvents(append = false) {
    const page = await feedback.attempt(() =>
      api<{ events: IntelEvent[]; nextCursor: string | null }>("GET", "api/intel/events", {
        query: { ...filters.value(), limit: 20, cursor: append ? cursor : undefined },
      }),
    );
    if (!page) return;
    cursor = page.nextCursor;
    more.hidden = !cursor;
    const items = page.events.map(eventCard);
    if (append) events.append(...items);
    else fill(events, items.length ? items : h("li", { class: "muted" }, "No events."));
  }

  function eventCard(e: IntelEvent): HTMLElement {
    const toggle = (name: "isRead" | "isActioned", label: string) => {
      const box = h("input", { type: "checkbox", checked: e[name] });
      box.addEventListener("change", async () => {
        const done = await feedback.run(() =>
          api<IntelEvent>("PATCH", `api/intel/events/${e.id}`, { body: { [name]: box.checked } }),
        );
        if (done) e[name] = box.checked;
        else box.checked = e[name];
        card.classList.toggle("unread", !e.isRead);
      });
      return field(label, box);
    };
    const card = h(
      "li",
      { class: `card event${e.isRead ? "" : " unread"}`, "data-severity": e.severity },
      h(
        "div",
        { class: "card-head" },
        h("span", { class: `badge sev-${e.severity}` }, e.severity),
        h("strong", null, e.title),
      ),
      h(
        "p",
        { class: "muted" },
        `${e.competitorDomain ?? e.competitorId} · ${e.type} · ${when(e.detectedAt)}`,
        e.details.url ? [" · ", link(e.details.url, "page")] : null,
      ),
      h("p", null, e.aiBrief),
      e.details.before !== undefined || e.details.after !== undefined
        ? h(
            "details",
            null,
            h("summary", null, "Before and after"),
            renderValue({ before: e.details.before, after: e.details.after }),
          )
        : null,
      h("div", { class: "actions" }, toggle("isRead", "Read"), toggle("isActioned", "Actioned")),
    );
    return card;
  }

  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "competitors-title" },
      h("h2", { id: "competitors-title" }, "Competitors"),
      feedback.el,
      h("div", { class: "split" }, h("div", null, addForm, list), snapshot),
      h("h3", null, "Events"),
      filters.el,
      events,
      more,
    ),
    show: () => {
      void loadCompetitors().then(() => loadEvents());
    },
  };
}
