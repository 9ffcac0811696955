import { api } from "../api.js";
import type { Crawl, CrawlPages, CrawlSourcesDeleted } from "../api-types.js";
import { fill, h, when } from "../dom.js";
import type { Feedback } from "../feedback.js";
import { crawlReport } from "./crawl-report.js";
import type { SourcesPanel } from "./sources.js";

/** What a crawl card can do, beyond showing the crawl. */
export interface CrawlActions {
  feedback: Feedback;
  sources: SourcesPanel;
  /** Reads the crawl again and keeps polling it while it runs. */
  watch(crawlId: string): Promise<void>;
  /** The API filters sources by crawl (`GET /api/knowledge?crawl_id=`). */
  canFilterByCrawl: boolean;
  /** The API deletes the pages a crawl brought (`DELETE …/crawl/{crawlId}/sources`). */
  canDeleteSources: boolean;
}

function reportButton(crawl: Crawl, report: HTMLElement, { feedback }: CrawlActions) {
  const show = async () => {
    const pages = await feedback.run(() =>
      api<CrawlPages>("GET", `api/knowledge/crawl/${crawl.crawlId}/pages`, {
        query: { limit: 100 },
      }),
    );
    if (pages) fill(report, crawlReport(pages.pages));
  };
  return h("button", { type: "button", onclick: show }, "Per-URL report");
}

function cancelButton(crawl: Crawl, { feedback, watch }: CrawlActions) {
  const cancel = () =>
    feedback
      .run(() => api("DELETE", `api/knowledge/crawl/${crawl.crawlId}`), "Cancelled")
      .then(() => watch(crawl.crawlId));
  return h("button", { type: "button", class: "danger", onclick: cancel }, "Cancel crawl");
}

function deleteSourcesButton(crawl: Crawl, { feedback, sources }: CrawlActions) {
  const remove = async () => {
    const question = `Delete the pages the crawl of ${crawl.seedUrl} brought? Pages another crawl or a direct add still holds are kept.`;
    if (!confirm(question)) return;
    const done = await feedback.run(() =>
      api<CrawlSourcesDeleted>("DELETE", `api/knowledge/crawl/${crawl.crawlId}/sources`),
    );
    if (done) {
      const kept = done.kept > 0 ? `; ${done.kept} kept (held elsewhere)` : "";
      feedback.say(`${done.deleted} pages deleted${kept}`);
    }
    await sources.refresh();
  };
  return h("button", { type: "button", class: "danger", onclick: remove }, "Delete its sources");
}

/** One crawl: its counters, its progress, and its per-URL report on demand. */
export function crawlCard(crawl: Crawl, actions: CrawlActions): HTMLElement {
  const report = h("div", { class: "report" });
  const settled = crawl.pagesIndexed + crawl.pagesFailed + crawl.pagesSkipped;
  const running = crawl.status === "indexing";
  return h(
    "li",
    { class: "card", "data-crawl": crawl.crawlId },
    h(
      "div",
      { class: "card-head" },
      h("strong", null, crawl.seedUrl),
      h("span", { class: `badge ${crawl.status}` }, crawl.status),
    ),
    h("progress", {
      max: Math.max(crawl.pagesDiscovered, 1),
      value: settled,
      "aria-label": `Crawl progress of ${crawl.seedUrl}`,
    }),
    h(
      "p",
      { class: "muted" },
      `${crawl.pagesIndexed} indexed · ${crawl.pagesSkipped} skipped · ${crawl.pagesFailed} failed · ${crawl.pagesDiscovered} found (cap ${crawl.maxPages}) · started ${when(crawl.startedAt)}`,
    ),
    crawl.lastError ? h("p", { class: "error-text" }, crawl.lastError) : null,
    h(
      "div",
      { class: "actions" },
      reportButton(crawl, report, actions),
      running ? cancelButton(crawl, actions) : null,
      actions.canFilterByCrawl
        ? h(
            "button",
            { type: "button", onclick: () => actions.sources.showCrawl(crawl.crawlId) },
            "Show its sources",
          )
        : null,
      actions.canDeleteSources && !running ? deleteSourcesButton(crawl, actions) : null,
    ),
    report,
  );
}
