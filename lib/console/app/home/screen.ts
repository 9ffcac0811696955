import { api } from "../api.js";
import type { CompetitorPage, CrawlList, EventPage, IntelEvent, SourcePage } from "../api-types.js";
import { changeInNumbers } from "../competitors/change.js";
import { fill, h, when } from "../dom.js";
import { download, eventsCsv } from "../exports.js";
import { Feedback } from "../feedback.js";
import type { Screen } from "../screen.js";
import { usagePanel } from "../settings/usage.js";
import type { Spec } from "../spec.js";
import { count, kindWord, severityWord } from "../words.js";

/**
 * Home: what changed this week across competitors (unread critical and high first), the sources
 * that failed and why, the crawls running, and today's usage against the quotas.
 */

const WEEK_MS = 7 * 86_400_000;
const URGENT = new Set(["critical", "high"]);
const RANK = ["critical", "high", "medium", "low"];

/** Unread critical and high first, then by severity, newest first within each. */
export function byUrgency(events: IntelEvent[]): IntelEvent[] {
  const urgent = (e: IntelEvent) => (!e.isRead && URGENT.has(e.severity) ? 0 : 1);
  return [...events].sort(
    (a, b) =>
      urgent(a) - urgent(b) ||
      RANK.indexOf(a.severity) - RANK.indexOf(b.severity) ||
      b.detectedAt.localeCompare(a.detectedAt),
  );
}

/** One change, under its company's name (its domain until a check finds the name). */
function changeItem(e: IntelEvent, company: string): HTMLElement {
  return h(
    "li",
    { class: `card event${e.isRead ? "" : " unread"}`, "data-severity": e.severity },
    h(
      "div",
      { class: "card-head" },
      h("span", { class: `badge sev-${e.severity}` }, severityWord(e.severity)),
      h("a", { href: `#/competitor?id=${encodeURIComponent(e.competitorId)}` }, company),
      h("span", null, kindWord(e.change.kind)),
      e.isRead ? null : h("span", { class: "muted" }, "Unread"),
    ),
    h("p", { class: "numbers" }, changeInNumbers(e.change)),
    h("p", { class: "muted" }, when(e.detectedAt)),
  );
}

export function homeScreen(spec: Spec): Screen {
  const feedback = new Feedback();
  const changes = h("ul", { class: "cards", "aria-label": "Changes this week" });
  const failed = h("ul", { class: "cards", "aria-label": "Sources that failed" });
  const crawls = h("ul", { class: "cards", "aria-label": "Crawls running" });
  const usage = usagePanel(feedback);
  let week: IntelEvent[] = [];
  const csv = h("button", { type: "button", class: "quiet" }, "Download as CSV");
  csv.addEventListener("click", () =>
    download("changes-this-week.csv", eventsCsv(week), "text/csv"),
  );
  const panel = (id: string, title: string, ...children: Array<HTMLElement | null>) =>
    h("section", { class: "panel", "aria-labelledby": id }, h("h3", { id }, title), ...children);

  async function load() {
    const since = new Date(Date.now() - WEEK_MS).toISOString();
    const [competitors, events, sources, crawlPage] = await Promise.all([
      feedback.attempt(() =>
        api<CompetitorPage>("GET", "api/intel/competitors", { query: { limit: 100 } }),
      ),
      feedback.attempt(() =>
        api<EventPage>("GET", "api/intel/events", { query: { since, limit: 100 } }),
      ),
      feedback.attempt(() =>
        api<SourcePage>("GET", "api/knowledge", { query: { status: "failed", limit: 20 } }),
      ),
      spec.has("get", "/api/knowledge/crawl")
        ? feedback.attempt(() =>
            api<CrawlList>("GET", "api/knowledge/crawl", { query: { limit: 20 } }),
          )
        : undefined,
      usage.load(),
    ]);
    const names = new Map(competitors?.competitors.map((c) => [c.id, c.companyName ?? c.domain]));
    if (events) {
      week = byUrgency(events.events);
      csv.hidden = week.length === 0;
      fill(
        changes,
        week.length
          ? week.map((e) => changeItem(e, names.get(e.competitorId) ?? e.competitorDomain))
          : h("li", { class: "muted" }, "No competitor changed anything this week."),
      );
    }
    if (sources)
      fill(
        failed,
        sources.sources.length === 0
          ? h("li", { class: "muted" }, "Every source was read.")
          : sources.sources.map((s) =>
              h(
                "li",
                { class: "card" },
                h("a", { href: `#/knowledge?source=${encodeURIComponent(s.id)}` }, s.name),
                h("p", { class: "error-text" }, s.last_error ?? "It could not be read."),
              ),
            ),
      );
    const running = crawlPage?.crawls.filter((c) => c.status === "indexing") ?? [];
    fill(
      crawls,
      running.length === 0
        ? h("li", { class: "muted" }, "No crawl is running.")
        : running.map((c) =>
            h(
              "li",
              { class: "card" },
              h("strong", null, c.seedUrl),
              h(
                "p",
                { class: "muted" },
                `${count(c.pagesIndexed, "page")} read of ${c.pagesDiscovered} found, since ${when(c.startedAt)}`,
              ),
            ),
          ),
    );
  }

  return {
    el: h(
      "section",
      { class: "screen", "aria-labelledby": "home-title" },
      h("h2", { id: "home-title" }, "Home"),
      feedback.el,
      h(
        "div",
        { class: "split" },
        panel("week-title", "What changed this week", changes, h("div", { class: "actions" }, csv)),
        h(
          "div",
          { class: "stack" },
          panel("failed-title", "Sources that failed", failed),
          panel("crawls-title", "Crawls running", crawls),
          usage.el,
        ),
      ),
    ),
    show: () => void load(),
  };
}
