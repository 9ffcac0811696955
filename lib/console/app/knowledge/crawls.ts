import { api } from "../api.js";
import type { Crawl, CrawlList } from "../api-types.js";
import { fill, h } from "../dom.js";
import type { Feedback } from "../feedback.js";
import type { Polled, Poller } from "../poller.js";
import type { Spec } from "../spec.js";
import { type CrawlActions, crawlCard } from "./crawl-card.js";
import type { SourcesPanel } from "./sources.js";

export interface CrawlsPanel extends Polled {
  el: HTMLElement;
  /** Lists the recent crawls (the API's list when it has one); once, when the screen opens. */
  load(): Promise<void>;
  /** Shows one crawl, read again, and polls it while it runs. */
  watch(crawlId: string): Promise<void>;
  /** Shows the crawls as they were last read. */
  draw(): void;
}

/** The crawls: the API's recent ones and those started here, watched while they run. */
export function crawlsPanel(
  spec: Spec,
  feedback: Feedback,
  live: Poller,
  sources: SourcesPanel,
): CrawlsPanel {
  const list = h("ul", { class: "cards", "aria-label": "Crawls" });
  const watched = new Map<string, Crawl>();
  const listed = spec.has("get", "/api/knowledge/crawl");
  const crawling = () => [...watched.values()].some((c) => c.status === "indexing");
  const abilities = {
    canFilterByCrawl: spec.filters("get", "/api/knowledge").some((p) => p.name === "crawl_id"),
    canDeleteSources: spec.has("delete", "/api/knowledge/crawl/{crawlId}/sources"),
  };

  const panel: CrawlsPanel = {
    el: list,
    draw() {
      const actions: CrawlActions = { feedback, sources, watch: panel.watch, ...abilities };
      fill(
        list,
        watched.size === 0 ? h("li", { class: "muted" }, "No crawls yet.") : null,
        [...watched.values()].map((crawl) => crawlCard(crawl, actions)),
      );
    },
    async load() {
      // Listed by the API when it can; otherwise the crawls started from this tab.
      const page = listed
        ? await feedback.attempt(() =>
            api<CrawlList>("GET", "api/knowledge/crawl", { query: { limit: 10 } }),
          )
        : undefined;
      for (const crawl of page?.crawls ?? []) watched.set(crawl.crawlId, crawl);
      panel.draw();
      live.start();
    },
    async watch(crawlId) {
      const crawl = await feedback.run(() => api<Crawl>("GET", `api/knowledge/crawl/${crawlId}`));
      if (!crawl) return;
      watched.set(crawlId, crawl);
      panel.draw();
      live.start();
    },
    async tick() {
      if (!crawling()) return;
      for (const [id, crawl] of watched) {
        if (crawl.status !== "indexing") continue;
        watched.set(id, await api<Crawl>("GET", `api/knowledge/crawl/${id}`));
      }
      panel.draw();
    },
    pending: crawling,
  };
  return panel;
}
