import { api } from "../api.js";
import type { Competitor, EventPage, IntelEvent } from "../api-types.js";
import { type Child, fill, h } from "../dom.js";
import { download, eventsCsv } from "../exports.js";
import type { Feedback } from "../feedback.js";
import { filtersFor } from "../filters.js";
import type { Spec } from "../spec.js";
import { eventCard } from "./event-card.js";

export interface EventsPanel {
  /** The filters, the feed, its "Load more" and its download, in that order. */
  els: Child[];
  /** Lists the events (again, or their next page). */
  load(append?: boolean): Promise<void>;
  /** The competitors the filter offers, as they were last listed. */
  offer(competitors: Competitor[]): void;
}

/** The events feed, newest first, with the API's own filters. */
export function eventsPanel(spec: Spec, feedback: Feedback): EventsPanel {
  let competitors: Competitor[] = [];
  const filters = filtersFor(spec, "/api/intel/events", {
    competitorId: () => competitors.map((c): [string, string] => [c.id, c.domain]),
  });
  const list = h("ul", { class: "cards", "aria-label": "Events" });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const csv = h("button", { type: "button", class: "quiet" }, "Download these events (CSV)");
  let cursor: string | null = null;
  let shown: IntelEvent[] = [];
  csv.addEventListener("click", () =>
    download("competitor-events.csv", eventsCsv(shown), "text/csv"),
  );

  async function load(append = false) {
    const page = await feedback.attempt(() =>
      api<EventPage>("GET", "api/intel/events", {
        query: { ...filters.value(), limit: 20, cursor: append ? cursor : undefined },
      }),
    );
    if (!page) return;
    cursor = page.nextCursor;
    more.hidden = !cursor;
    shown = append ? [...shown, ...page.events] : page.events;
    const items = page.events.map((e) => eventCard(e, feedback));
    if (append) list.append(...items);
    else fill(list, items.length ? items : h("li", { class: "muted" }, "No events."));
  }
  filters.el.addEventListener("change", () => void load());
  more.addEventListener("click", () => void load(true));

  return {
    els: [filters.el, list, h("div", { class: "actions" }, more, csv)],
    load,
    offer(listed) {
      competitors = listed;
      filters.refresh();
    },
  };
}
