import { ApiError, api, objectUrl } from "../api.js";
import type {
  BrandProfile,
  CompetitorState,
  EventPage,
  IntelEvent,
  PriceSeries,
} from "../api-types.js";
import { fill, h, link, when } from "../dom.js";
import { exportName } from "../export-name.js";
import { download, downloadExport, eventsCsv } from "../exports.js";
import { Feedback } from "../feedback.js";
import type { Screen } from "../screen.js";
import type { Spec } from "../spec.js";
import { kindWord, sectionWord, severityWord } from "../words.js";
import { beforeAfter, changeInNumbers, price } from "./change.js";
import { priceChart } from "./price-chart.js";
import { rulesPanel } from "./rules.js";

/**
 * A page per competitor (`#/competitor?id=…`): its prices over time, its plans beside ours, what
 * changed as a timeline with before and after side by side, its alerts, and its battlecard to
 * download or print.
 */

/** The brand profile, or undefined while none is saved (a 404 is an answer here, not an error). */
export async function brandOrNone(): Promise<BrandProfile | undefined> {
  try {
    return await api<BrandProfile>("GET", "api/brand");
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

/**
 * The page before and after, side by side, fetched when opened (each is up to 600 KB) and with
 * the key, so shown from memory. Events without screenshots (no browser at the check, or older
 * than them) show none.
 */
function screenshots(e: IntelEvent): HTMLElement | null {
  const shots = e.screenshots;
  if (!shots?.before && !shots?.after) return null;
  const pending: Array<[HTMLImageElement, string]> = [];
  const figure = (label: string, path: string | null) => {
    if (!path)
      return h(
        "figure",
        null,
        h("figcaption", null, label),
        h("p", { class: "muted" }, "Not taken"),
      );
    const img = h("img", { alt: `${label}: the page as that check saw it` });
    pending.push([img, path]);
    return h("figure", null, h("figcaption", null, label), img);
  };
  const el = h(
    "details",
    { class: "shots" },
    h("summary", null, "Screenshots"),
    h("div", { class: "compare" }, figure("Before", shots.before), figure("After", shots.after)),
  );
  el.addEventListener("toggle", () => {
    if (!el.open) return;
    for (const [img, path] of pending.splice(0)) {
      objectUrl(path).then(
        (url) => {
          // Once drawn, the image no longer needs the object URL.
          img.addEventListener("load", () => URL.revokeObjectURL(url), { once: true });
          img.src = url;
        },
        () =>
          img.replaceWith(
            h("p", { class: "muted" }, "This screenshot has expired or could not be loaded."),
          ),
      );
    }
  });
  return el;
}

function timeline(events: IntelEvent[]): HTMLElement {
  if (events.length === 0)
    return h(
      "p",
      { class: "muted" },
      "No changes seen yet. The first check records how the site looks; later ones report what moved.",
    );
  return h(
    "ol",
    { class: "timeline", "aria-label": "Changes" },
    events.map((e) =>
      h(
        "li",
        { class: `event${e.isRead ? "" : " unread"}`, "data-severity": e.severity },
        h("time", { datetime: e.detectedAt }, when(e.detectedAt)),
        h("span", { class: `badge sev-${e.severity}` }, severityWord(e.severity)),
        h("strong", null, `${sectionWord(e.type)}: ${kindWord(e.change.kind)}`),
        h("p", { class: "numbers" }, changeInNumbers(e.change)),
        h("p", null, e.aiBrief),
        e.change.before || e.change.after
          ? h("details", null, h("summary", null, "Before and after"), beforeAfter(e.change))
          : null,
        screenshots(e),
        e.change.url ? link(e.change.url, "Open the page") : null,
      ),
    ),
  );
}

function plansCompared(competitor: CompetitorState, brand: BrandProfile | undefined): HTMLElement {
  const theirs = competitor.snapshot?.plans ?? [];
  return h(
    "div",
    { class: "compare" },
    h(
      "div",
      null,
      h("h4", null, competitor.companyName ?? competitor.domain),
      theirs.length
        ? h(
            "ul",
            null,
            theirs.map((p) =>
              h(
                "li",
                null,
                h("strong", null, p.name),
                ` ${p.priceText || price(p.price, p.currency, p.period, p.contactSales)}`,
              ),
            ),
          )
        : h("p", { class: "muted" }, "No plans seen on their site yet."),
    ),
    h(
      "div",
      null,
      h("h4", null, brand?.name ?? "You"),
      brand?.products?.length
        ? h(
            "ul",
            null,
            brand.products.map((p) => h("li", null, p)),
          )
        : h(
            "p",
            null,
            brand ? "Your profile lists no plans. " : "No brand profile yet. ",
            h(
              "a",
              { class: "button", href: "#/settings" },
              brand ? "Add your plans" : "Set up your brand profile",
            ),
          ),
    ),
  );
}

export function competitorPage(spec: Spec): Screen {
  const feedback = new Feedback();
  const title = h("h2", { id: "competitor-title" }, "Competitor");
  const body = h("div", { class: "stack" });
  const el = h(
    "section",
    { class: "screen", "aria-labelledby": "competitor-title" },
    h("p", { class: "no-print" }, h("a", { href: "#/competitors" }, "All competitors")),
    title,
    feedback.el,
    body,
  );

  async function show(id: string) {
    fill(body, h("p", { role: "status" }, "Loading…"));
    const [competitor, page, brand, prices] = await Promise.all([
      feedback.run(() =>
        api<CompetitorState>("GET", `api/intel/competitors/${encodeURIComponent(id)}`),
      ),
      feedback.attempt(() =>
        api<EventPage>("GET", "api/intel/events", { query: { competitorId: id, limit: 100 } }),
      ),
      feedback.attempt(brandOrNone),
      spec.has("get", "/api/intel/competitors/{id}/prices")
        ? feedback.attempt(() =>
            api<{ plans: PriceSeries[] }>(
              "GET",
              `api/intel/competitors/${encodeURIComponent(id)}/prices`,
            ),
          )
        : undefined,
    ]);
    if (!competitor) return fill(body);
    const name = competitor.companyName ?? competitor.domain;
    const events = page?.events ?? [];
    title.textContent = name;
    document.title = `${name} · KB & Intel`;
    const rules = spec.has("post", "/api/intel/alert-rules") ? rulesPanel(id, feedback) : null;
    const card = (format: "md" | "docx") =>
      feedback.run(() =>
        downloadExport(`api/intel/competitors/${id}/battlecard`, `battlecard ${name}`, format),
      );
    fill(
      body,
      h(
        "p",
        { class: "muted" },
        link(competitor.homepage ?? `https://${competitor.domain}/`, competitor.domain),
        ` · last checked ${when(competitor.lastAnalyzedAt)}`,
        competitor.snapshot?.headline ? [" · “", competitor.snapshot.headline, "”"] : null,
      ),
      h(
        "div",
        { class: "actions no-print" },
        h("button", { type: "button", onclick: () => card("md") }, "Download battlecard"),
        h("button", { type: "button", onclick: () => card("docx") }, "Battlecard for Word"),
        h("button", { type: "button", onclick: () => window.print() }, "Print battlecard"),
        h(
          "button",
          {
            type: "button",
            onclick: () =>
              download(exportName(`${name} changes`, "csv"), eventsCsv(events), "text/csv"),
          },
          "Download changes (CSV)",
        ),
      ),
      h(
        "section",
        { class: "panel", "aria-labelledby": "prices-title" },
        h("h3", { id: "prices-title" }, "Price history"),
        prices
          ? priceChart(prices.plans)
          : h("p", { class: "muted" }, "Price history is not available yet."),
      ),
      h(
        "section",
        { class: "panel", "aria-labelledby": "plans-title" },
        h("h3", { id: "plans-title" }, "Their plans and yours"),
        plansCompared(competitor, brand),
      ),
      h(
        "section",
        { class: "panel", "aria-labelledby": "timeline-title" },
        h("h3", { id: "timeline-title" }, "What changed"),
        timeline(events),
      ),
      rules?.el,
    );
    await rules?.load();
  }

  return {
    el,
    show: (params) => {
      const id = params.get("id");
      if (id) void show(id);
      else location.hash = "#/competitors";
    },
  };
}
