import { append, h } from "../dom.js";
import { Feedback } from "../feedback.js";
import { poller } from "../poller.js";
import type { Screen } from "../screen.js";
import type { Spec } from "../spec.js";
import { addTextForm } from "./add-text.js";
import { addUrlForm } from "./add-url.js";
import { crawlForm } from "./crawl-form.js";
import { crawlsPanel } from "./crawls.js";
import { sourcesPanel } from "./sources.js";
import { uploadPanel } from "./upload.js";

/** Knowledge: add text, pages and files, crawl sites, and manage the sources. */
export function knowledgeScreen(spec: Spec): Screen {
  const feedback = new Feedback();
  const el = h("section", { class: "screen", "aria-labelledby": "knowledge-title" });
  // The screen's one poller: crawls under way, then the sources (a crawl adds some).
  const live = poller({ screen: el, onError: (err) => feedback.error(err) });
  const sources = sourcesPanel(spec, feedback, live);
  const crawls = crawlsPanel(spec, feedback, live, sources);
  live.poll(crawls, sources);
  append(el, [
    h("h2", { id: "knowledge-title" }, "Knowledge"),
    feedback.el,
    h(
      "div",
      { class: "grid" },
      addTextForm(feedback, sources),
      addUrlForm(spec, feedback, sources),
      uploadPanel(feedback, sources),
      crawlForm(spec, feedback, crawls),
    ),
    h("h3", null, "Crawls"),
    crawls.el,
    h("h3", null, "Sources"),
    sources.els,
  ]);

  let loaded = false;
  return {
    el,
    show(params) {
      if (!loaded) {
        loaded = true;
        void crawls.load();
      }
      void sources.show(params.get("source"));
    },
  };
}
