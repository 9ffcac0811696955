import { api } from "../api.js";
import type { CheckAnswer, Competitor, CompetitorPage } from "../api-types.js";
import { fill, h, when } from "../dom.js";
import { busy, type Feedback } from "../feedback.js";
import type { EventsPanel } from "./events.js";
import type { SnapshotPanel } from "./snapshot.js";

export interface CompetitorsList {
  el: HTMLElement;
  /** Lists the competitors again. */
  load(): Promise<void>;
}

/** What a competitor's card acts on. */
interface CardDeps {
  feedback: Feedback;
  snapshot: SnapshotPanel;
  events: EventsPanel;
  list: CompetitorsList;
}

/** Checks a competitor now; its events then show in the feed. */
function checkButton(c: Competitor, { feedback, events, list }: CardDeps): HTMLButtonElement {
  const check = h("button", { type: "button" }, "Check now");
  check.addEventListener("click", async () => {
    feedback.say(`Checking ${c.domain}…`);
    const answer = await busy(check, () =>
      feedback.run(() => api<CheckAnswer>("POST", `api/intel/competitors/${c.id}/check`)),
    );
    if (answer) feedback.say(`${c.domain}: ${answer.result.summary}`);
    await Promise.all([list.load(), events.load()]);
  });
  return check;
}

function competitorCard(c: Competitor, deps: CardDeps): HTMLElement {
  const { feedback, snapshot, list } = deps;
  const remove = async () => {
    if (!confirm(`Stop tracking ${c.domain}?`)) return;
    await feedback.run(() => api("DELETE", `api/intel/competitors/${c.id}`), "Removed");
    await list.load();
  };
  return h(
    "li",
    { class: "card", "data-competitor": c.domain },
    h(
      "div",
      { class: "card-head" },
      h(
        "a",
        { href: `#/competitor?id=${encodeURIComponent(c.id)}` },
        h("strong", null, c.companyName ?? c.domain),
      ),
      h("span", { class: "muted" }, `last checked ${when(c.lastAnalyzedAt)}`),
    ),
    h(
      "div",
      { class: "actions" },
      checkButton(c, deps),
      h("button", { type: "button", onclick: () => snapshot.show(c.id) }, "Snapshot"),
      h("button", { type: "button", class: "danger", onclick: remove }, "Remove"),
    ),
  );
}

/** The tracked competitors: check one now, show its snapshot, or stop tracking it. */
export function competitorsList(
  feedback: Feedback,
  snapshot: SnapshotPanel,
  events: EventsPanel,
): CompetitorsList {
  const el = h("ul", { class: "cards", "aria-label": "Competitors" });
  const list: CompetitorsList = {
    el,
    async load() {
      const page = await feedback.attempt(() =>
        api<CompetitorPage>("GET", "api/intel/competitors", { query: { limit: 100 } }),
      );
      if (!page) return;
      events.offer(page.competitors);
      const deps = { feedback, snapshot, events, list };
      fill(
        el,
        page.competitors.length === 0
          ? h("li", { class: "muted" }, "No competitors tracked yet.")
          : null,
        page.competitors.map((c) => competitorCard(c, deps)),
      );
    },
  };
  return list;
}
