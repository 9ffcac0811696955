import { api, uploadFile } from "./api.js";
import { field, fill, h, humanize, link, select, when } from "./dom.js";
import { Feedback } from "./feedback.js";
import { filtersFor } from "./filters.js";
import { poller } from "./poller.js";
import { schemaForm } from "./schema-form.js";
import type { Screen } from "./screen.js";
import type { Spec } from "./spec.js";

interface Source {
  id: string;
  type: string;
  name: string;
  source_url_or_path: string | null;
  status: string;
  chunk_count: number;
  enabled: number | boolean;
  created_at: string;
  indexed_at: string | null;
  last_error: string | null;
  error_code: string | null;
  crawl_id: string | null;
  [more: string]: unknown;
}

interface Crawl {
  crawlId: string;
  seedUrl: string;
  status: string;
  maxPages: number;
  pagesDiscovered: number;
  pagesIndexed: number;
  pagesFailed: number;
  pagesSkipped: number;
  startedAt: string;
  finishedAt: string | null;
  lastError?: string | null;
}

interface CrawlPage {
  url: string;
  status: string;
  reason: string | null;
  message: string | null;
  httpStatus: number | null;
}

const BUSY = new Set(["indexing", "awaiting_upload"]);
/** Fields the row shows itself; any other field the API adds is listed in the row's details. */
const SHOWN = new Set([
  "id",
  "type",
  "name",
  "source_url_or_path",
  "status",
  "chunk_count",
  "enabled",
  "last_error",
  "error_code",
]);

export function knowledgeScreen(spec: Spec): Screen {
  const feedback = new Feedback();
  const list = h("ul", { class: "cards", "aria-label": "Knowledge sources" });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const patchSchema = spec.body("patch", "/api/knowledge/{id}");
  const canRename = Boolean(patchSchema.properties?.name);
  /** Settings the API lets a source change beyond enabled and name (refresh schedules, say). */
  const extraSettings = Object.entries(patchSchema.properties ?? {})
    .map(([name, s]) => [name, spec.resolve(s)] as const)
    .filter(([name, s]) => name !== "enabled" && name !== "name" && (s.enum?.length ?? 0) > 0)
    .map(([name, s]) => [name, (s.enum ?? []).filter((v) => v !== null).map(String)] as const);
  let sources: Source[] = [];
  let cursor: string | null = null;
  let highlight: string | null = null;

  const filters = filtersFor(spec, "/api/knowledge", () => void refresh());

  /** Lists the sources (again, or their next page); fails as the API does. */
  async function load(append = false) {
    const page = await api<{ sources: Source[]; nextCursor: string | null }>(
      "GET",
      "api/knowledge",
      { query: { ...filters.value(), limit: 50, cursor: append ? cursor : undefined } },
    );
    // A name being edited stays on screen; the list catches up on the next refresh.
    if (list.querySelector("form.rename")) return live.start();
    sources = append ? [...sources, ...page.sources] : page.sources;
    cursor = page.nextCursor;
    more.hidden = !cursor;
    fill(
      list,
      sources.length === 0 ? h("li", { class: "muted" }, "No sources yet.") : null,
      sources.map(row),
    );
    live.start();
  }
  async function refresh(append = false) {
    await feedback.attempt(() => load(append));
  }
  more.addEventListener("click", () => void refresh(true));

  async function act(action: () => Promise<unknown>, done: string) {
    await feedback.run(action, done);
    await refresh();
  }

  function row(source: Source): HTMLElement {
    const enabled = Boolean(source.enabled);
    const toggle = h("input", { type: "checkbox", checked: enabled });
    toggle.addEventListener("change", () =>
      act(
        () => api("PATCH", `api/knowledge/${source.id}`, { body: { enabled: toggle.checked } }),
        `${source.name} ${toggle.checked ? "enabled" : "disabled"}`,
      ),
    );
    // Renaming happens in place: the name becomes a text box (Enter saves, Escape cancels).
    const title = h("strong", null, source.name);
    const rename = canRename
      ? h(
          "button",
          {
            type: "button",
            onclick: () => {
              const input = h("input", { type: "text", value: source.name, maxlength: 200 });
              const form = h(
                "form",
                { class: "rename" },
                field(`New name for ${source.name}`, input),
                h("button", { type: "submit" }, "Save name"),
              );
              form.addEventListener("submit", (event) => {
                event.preventDefault();
                const name = input.value.trim();
                form.replaceWith(title);
                if (!name || name === source.name) return;
                title.textContent = name;
                void act(
                  () => api("PATCH", `api/knowledge/${source.id}`, { body: { name } }),
                  `Renamed to ${name}`,
                );
              });
              input.addEventListener("keydown", (event) => {
                if (event.key === "Escape") form.replaceWith(title);
              });
              title.replaceWith(form);
              input.select();
            },
          },
          "Rename",
        )
      : null;
    // A refresh schedule applies to web pages only (the API refuses it for others).
    const applicable = extraSettings.filter(
      ([name]) => name !== "refresh" || source.type === "url",
    );
    const settings = applicable.map(([name, values]) => {
      const control = select([["", "—"], ...values.map((v): [string, string] => [v, v])]);
      control.value =
        source[name] === undefined || source[name] === null ? "" : String(source[name]);
      control.addEventListener("change", () =>
        act(
          () =>
            api("PATCH", `api/knowledge/${source.id}`, {
              body: { [name]: control.value === "" ? null : control.value },
            }),
          `${humanize(name)} saved`,
        ),
      );
      return field(humanize(name), control);
    });
    const extra = Object.entries(source).filter(
      ([k, v]) => !SHOWN.has(k) && v !== null && v !== undefined && v !== "",
    );
    const place = source.source_url_or_path;
    return h(
      "li",
      {
        class: `card source${source.id === highlight ? " highlight" : ""}`,
        id: `source-${source.id}`,
        "data-status": source.status,
      },
      h(
        "div",
        { class: "card-head" },
        title,
        h("span", { class: `badge ${source.status}` }, source.status.replace("_", " ")),
        h("span", { class: "muted" }, `${source.type} · ${source.chunk_count} chunks`),
      ),
      place
        ? h("p", { class: "place" }, /^https?:/i.test(place) ? link(place, place) : place)
        : null,
      source.status === "failed"
        ? h(
            "p",
            { class: "error-text" },
            h("strong", null, source.error_code ?? "failed"),
            `: ${source.last_error ?? "indexing failed"}`,
          )
        : null,
      h(
        "div",
        { class: "actions" },
        field("Enabled", toggle),
        settings,
        rename,
        h(
          "button",
          {
            type: "button",
            onclick: () =>
              act(() => api("POST", `api/knowledge/${source.id}/reindex`), "Reindexing"),
          },
          "Reindex",
        ),
        h(
          "button",
          {
            type: "button",
            class: "danger",
            onclick: () => {
              if (confirm(`Delete ${source.name} with its chunks?`)) {
                void act(() => api("DELETE", `api/knowledge/${source.id}`), "Deleted");
              }
            },
          },
          "Delete",
        ),
      ),
      extra.length > 0
        ? h(
            "details",
            null,
            h("summary", null, "Details"),
            h(
              "dl",
              null,
              extra.map(([k, v]) => [
                h("dt", null, humanize(k)),
                h("dd", null, /_at$|At$/.test(k) ? when(String(v)) : String(v)),
              ]),
            ),
          )
        : null,
    );
  }

  // Add text.
  const text = h("textarea", { rows: 4, required: true });
  const textName = h("input", { type: "text", maxlength: 200 });
  const textForm = h(
    "form",
    { class: "panel", "aria-label": "Add text" },
    h("h3", null, "Add text"),
    field("Name", textName),
    field("Text (required)", text, "Markdown headings become sections."),
    h("button", { type: "submit" }, "Add text"),
  );
  textForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      text: text.value,
      ...(textName.value.trim() ? { name: textName.value.trim() } : {}),
    };
    const added = await feedback.run(
      () => api("POST", "api/knowledge", { body }),
      "Text added; indexing",
    );
    if (added) {
      textForm.reset();
      await refresh();
    }
  });

  // Add a URL.
  const url = h("input", {
    type: "url",
    required: true,
    placeholder: "https://example.com/pricing",
  });
  const urlName = h("input", { type: "text", maxlength: 200 });
  // A refresh schedule, when the API offers one for web pages.
  const schedules = (spec.body("post", "/api/knowledge").properties?.refresh?.enum ?? [])
    .filter((v) => v !== null)
    .map(String);
  const urlRefresh = select([["", "Never"], ...schedules.map((v): [string, string] => [v, v])]);
  const urlForm = h(
    "form",
    { class: "panel", "aria-label": "Add a web page" },
    h("h3", null, "Add a web page"),
    field("Page URL (required)", url),
    field("Name", urlName),
    schedules.length > 0 ? field("Refresh", urlRefresh) : null,
    h("button", { type: "submit" }, "Add page"),
  );
  urlForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      url: url.value,
      ...(urlName.value.trim() ? { name: urlName.value.trim() } : {}),
      ...(urlRefresh.value ? { refresh: urlRefresh.value } : {}),
    };
    const added = await feedback.run(() =>
      api<{ id: string; created?: boolean }>("POST", "api/knowledge", { body }),
    );
    if (added) {
      // A page the workspace has already is refreshed rather than added twice.
      feedback.say(
        added.created === false ? "Already a source: refreshing it" : "Page added; indexing",
      );
      highlight = added.id;
      urlForm.reset();
      await refresh();
    }
  });

  // Upload files: drop them, or pick them with the (keyboard-reachable) file input.
  const files = h("input", { type: "file", multiple: true, class: "file-input" });
  const uploads = h("ul", { class: "uploads", "aria-label": "Uploads" });
  const drop = h(
    "div",
    { class: "drop" },
    h("p", null, "Drop files here, or"),
    field("Choose files", files, "PDF, DOCX, HTML, Markdown, text or CSV; up to 50 MB each."),
  );
  async function send(picked: File[]) {
    for (const file of picked) {
      const bar = h("progress", { max: 100, value: 0, "aria-label": `Upload of ${file.name}` });
      const state = h("span", { class: "muted" }, "starting");
      uploads.prepend(h("li", null, h("span", null, file.name), bar, state));
      const done = await feedback.run(() =>
        uploadFile(file, (sent, total) => {
          bar.value = total > 0 ? Math.round((sent / total) * 100) : 100;
          state.textContent = `${bar.value}%`;
        }),
      );
      state.textContent = done ? "uploaded; indexing" : "failed";
      await refresh();
    }
  }
  files.addEventListener("change", () => {
    void send([...(files.files ?? [])]);
    files.value = "";
  });
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    void send([...(event.dataTransfer?.files ?? [])]);
  });
  const uploadPanel = h(
    "section",
    { class: "panel", "aria-label": "Upload files" },
    h("h3", null, "Upload files"),
    drop,
    uploads,
  );

  // Crawls: start one, watch its counters and its per-URL report.
  const crawls = h("ul", { class: "cards", "aria-label": "Crawls" });
  const watched = new Map<string, Crawl>();
  // Every option the API takes (scope, paths, a refresh schedule), from its schema.
  const crawlFields = schemaForm(spec, spec.body("post", "/api/knowledge/crawl"), {
    collapseOptional: true,
  });
  const crawlForm = h(
    "form",
    { class: "panel", "aria-label": "Crawl a site" },
    h("h3", null, "Crawl a site"),
    crawlFields.el,
    h("button", { type: "submit" }, "Start crawl"),
  );
  crawlForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = crawlFields.value();
    const started = await feedback.run(
      () => api<{ crawlId: string }>("POST", "api/knowledge/crawl", { body }),
      "Crawl started",
    );
    if (started) {
      crawlForm.reset();
      await watchCrawl(started.crawlId);
    }
  });

  async function watchCrawl(crawlId: string) {
    const crawl = await feedback.run(() => api<Crawl>("GET", `api/knowledge/crawl/${crawlId}`));
    if (!crawl) return;
    watched.set(crawlId, crawl);
    drawCrawls();
    live.start();
  }
  const crawling = () => [...watched.values()].some((c) => c.status === "indexing");

  function drawCrawls() {
    fill(
      crawls,
      watched.size === 0 ? h("li", { class: "muted" }, "No crawls yet.") : null,
      [...watched.values()].map((crawl) => {
        const report = h("div", { class: "report" });
        const settled = crawl.pagesIndexed + crawl.pagesFailed + crawl.pagesSkipped;
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
            h(
              "button",
              {
                type: "button",
                onclick: async () => {
                  const pages = await feedback.run(() =>
                    api<{ pages: CrawlPage[] }>(
                      "GET",
                      `api/knowledge/crawl/${crawl.crawlId}/pages`,
                      {
                        query: { limit: 100 },
                      },
                    ),
                  );
                  if (pages) fill(report, pageReport(pages.pages));
                },
              },
              "Per-URL report",
            ),
            crawl.status === "indexing"
              ? h(
                  "button",
                  {
                    type: "button",
                    class: "danger",
                    onclick: () =>
                      feedback
                        .run(
                          () => api("DELETE", `api/knowledge/crawl/${crawl.crawlId}`),
                          "Cancelled",
                        )
                        .then(() => watchCrawl(crawl.crawlId)),
                  },
                  "Cancel crawl",
                )
              : null,
            canFilterByCrawl
              ? h(
                  "button",
                  {
                    type: "button",
                    onclick: () => {
                      filters.set("crawl_id", crawl.crawlId);
                      void refresh();
                    },
                  },
                  "Show its sources",
                )
              : null,
            canDeleteCrawlSources && crawl.status !== "indexing"
              ? h(
                  "button",
                  {
                    type: "button",
                    class: "danger",
                    onclick: async () => {
                      const question = `Delete the pages the crawl of ${crawl.seedUrl} brought? Pages another crawl or a direct add still holds are kept.`;
                      if (!confirm(question)) return;
                      const done = await feedback.run(() =>
                        api<{ deleted: number; kept: number }>(
                          "DELETE",
                          `api/knowledge/crawl/${crawl.crawlId}/sources`,
                        ),
                      );
                      if (done) {
                        const kept = done.kept > 0 ? `; ${done.kept} kept (held elsewhere)` : "";
                        feedback.say(`${done.deleted} pages deleted${kept}`);
                      }
                      await refresh();
                    },
                  },
                  "Delete its sources",
                )
              : null,
          ),
          report,
        );
      }),
    );
  }

  const crawlList = spec.has("get", "/api/knowledge/crawl");
  const canFilterByCrawl = spec.filters("get", "/api/knowledge").some((p) => p.name === "crawl_id");
  const canDeleteCrawlSources = spec.has("delete", "/api/knowledge/crawl/{crawlId}/sources");
  async function loadCrawls() {
    // Listed by the API when it can; otherwise the crawls started from this tab.
    const page = crawlList
      ? await feedback.attempt(() =>
          api<{ crawls: Crawl[] }>("GET", "api/knowledge/crawl", { query: { limit: 10 } }),
        )
      : undefined;
    for (const crawl of page?.crawls ?? []) watched.set(crawl.crawlId, crawl);
    drawCrawls();
    live.start();
  }

  const el = h(
    "section",
    { class: "screen", "aria-labelledby": "knowledge-title" },
    h("h2", { id: "knowledge-title" }, "Knowledge"),
    feedback.el,
    h("div", { class: "grid" }, textForm, urlForm, uploadPanel, crawlForm),
    h("h3", null, "Crawls"),
    crawls,
    h("h3", null, "Sources"),
    filters.el,
    list,
    more,
  );

  // The screen's one poller: crawls under way, then the sources (a crawl adds some).
  const live = poller({
    async tick() {
      if (crawling()) {
        for (const [id, crawl] of watched) {
          if (crawl.status !== "indexing") continue;
          watched.set(id, await api<Crawl>("GET", `api/knowledge/crawl/${id}`));
        }
        drawCrawls();
      }
      await load();
    },
    pending: () => crawling() || sources.some((s) => BUSY.has(s.status)),
    screen: el,
    onError: (err) => feedback.error(err),
  });

  let loaded = false;
  return {
    el,
    show(params) {
      highlight = params.get("source");
      if (!loaded) {
        loaded = true;
        void loadCrawls();
      }
      void refresh().then(() => {
        if (highlight) document.getElementById(`source-${highlight}`)?.scrollIntoView();
      });
    },
  };
}

function pageReport(pages: CrawlPage[]): HTMLElement {
  if (pages.length === 0) return h("p", { class: "muted" }, "No pages yet.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      null,
      h("caption", null, "Pages of the crawl"),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          h("th", { scope: "col" }, "URL"),
          h("th", { scope: "col" }, "Result"),
          h("th", { scope: "col" }, "Why"),
        ),
      ),
      h(
        "tbody",
        null,
        pages.map((p) =>
          h(
            "tr",
            null,
            h("td", { class: "place" }, p.url),
            h("td", null, h("span", { class: `badge ${p.status}` }, p.status)),
            h(
              "td",
              null,
              [p.reason, p.httpStatus ? `HTTP ${p.httpStatus}` : null, p.message]
                .filter(Boolean)
                .join(" · "),
            ),
          ),
        ),
      ),
    ),
  );
}
