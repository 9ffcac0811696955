import { api } from "../api.js";
import type { CrawlStarted } from "../api-types.js";
import { h } from "../dom.js";
import type { Feedback } from "../feedback.js";
import { schemaForm } from "../schema-form.js";
import type { Spec } from "../spec.js";
import type { CrawlsPanel } from "./crawls.js";

/** Starts a crawl with every option the API takes (scope, paths, a refresh schedule). */
export function crawlForm(spec: Spec, feedback: Feedback, crawls: CrawlsPanel): HTMLFormElement {
  const fields = schemaForm(spec, spec.body("post", "/api/knowledge/crawl"), {
    collapseOptional: true,
  });
  const form = h(
    "form",
    { class: "panel", "aria-label": "Crawl a site" },
    h("h3", null, "Crawl a site"),
    fields.el,
    h("button", { type: "submit" }, "Start crawl"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = fields.value();
    const started = await feedback.run(
      () => api<CrawlStarted>("POST", "api/knowledge/crawl", { body }),
      "Crawl started",
    );
    if (started) {
      form.reset();
      await crawls.watch(started.crawlId);
    }
  });
  return form;
}
