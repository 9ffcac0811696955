import { api } from "../api.js";
import type { Source, SourcePage } from "../api-types.js";
import { type Child, fill, h } from "../dom.js";
import type { Feedback } from "../feedback.js";
import { filtersFor } from "../filters.js";
import type { Polled, Poller } from "../poller.js";
import type { Spec } from "../spec.js";
import { sourceCard, sourceSettings } from "./source-card.js";

/** States a source leaves by itself: the list is polled while one is in them. */
const BUSY = new Set(["indexing", "awaiting_upload"]);

export interface SourcesPanel extends Polled {
  /** The filters, the list and its "Load more", in that order. */
  els: Child[];
  /** Lists the sources (again, or their next page); fails as the API does. */
  load(append?: boolean): Promise<void>;
  /** Lists them again, showing a failure instead of failing. */
  refresh(append?: boolean): Promise<void>;
  /** Runs a change to a source, says how it went, and lists the sources again. */
  act(action: () => Promise<unknown>, done: string): Promise<void>;
  /** Marks a source (one just added, the one a link points at) on the next listing. */
  mark(id: string | null): void;
  /** Lists them again with `id` marked, scrolled to. */
  show(id: string | null): Promise<void>;
  /** Lists the pages of one crawl (when the API can filter by crawl). */
  showCrawl(crawlId: string): void;
  /** Calls `seen` with every listing, so an upload's line follows its source to "Ready". */
  onListed(seen: (sources: Source[]) => void): void;
}

/** The sources: the API's filters, a card per source, and the next page on demand. */
export function sourcesPanel(spec: Spec, feedback: Feedback, live: Poller): SourcesPanel {
  const filters = filtersFor(spec, "/api/knowledge");
  const list = h("ul", { class: "cards", "aria-label": "Knowledge sources" });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const settings = sourceSettings(spec);
  let sources: Source[] = [];
  let cursor: string | null = null;
  let highlight: string | null = null;
  const listeners: Array<(sources: Source[]) => void> = [];

  const panel: SourcesPanel = {
    els: [filters.el, list, more],
    async load(append = false) {
      const page = await api<SourcePage>("GET", "api/knowledge", {
        query: { ...filters.value(), limit: 50, cursor: append ? cursor : undefined },
      });
      // A name being edited stays on screen; the list catches up on the next refresh.
      if (list.querySelector("form.rename")) return live.start();
      sources = append ? [...sources, ...page.sources] : page.sources;
      cursor = page.nextCursor;
      more.hidden = !cursor;
      fill(
        list,
        sources.length === 0 ? h("li", { class: "muted" }, "No sources yet.") : null,
        sources.map((source) => sourceCard(source, source.id === highlight, settings, panel.act)),
      );
      for (const seen of listeners) seen(sources);
      live.start();
    },
    async refresh(append = false) {
      await feedback.attempt(() => panel.load(append));
    },
    async act(action, done) {
      await feedback.run(action, done);
      await panel.refresh();
    },
    mark(id) {
      highlight = id;
    },
    async show(id) {
      highlight = id;
      await panel.refresh();
      if (highlight) document.getElementById(`source-${highlight}`)?.scrollIntoView();
    },
    showCrawl(crawlId) {
      filters.set("crawl_id", crawlId);
      void panel.refresh();
    },
    onListed: (seen) => listeners.push(seen),
    tick: () => panel.load(),
    pending: () => sources.some((s) => BUSY.has(s.status)),
  };
  filters.el.addEventListener("change", () => void panel.refresh());
  more.addEventListener("click", () => void panel.refresh(true));
  return panel;
}
