import { api } from "../api.js";
import type { CompetitorState } from "../api-types.js";
import { renderDocument } from "../document.js";
import { fill, h, when } from "../dom.js";
import type { Feedback } from "../feedback.js";

/** A competitor's record fields; anything else the API returns is its snapshot. */
const RECORD = new Set(["id", "domain", "name", "homepage", "createdAt", "lastAnalyzedAt"]);

export interface SnapshotPanel {
  el: HTMLElement;
  /** Reads a competitor and shows what monitoring knows of it. */
  show(id: string): Promise<void>;
}

/** A competitor's latest snapshot, as a document. */
export function snapshotPanel(feedback: Feedback): SnapshotPanel {
  const el = h("div", { class: "output" });
  async function show(id: string) {
    const competitor = await feedback.run(() =>
      api<CompetitorState>("GET", `api/intel/competitors/${id}`),
    );
    if (!competitor) return;
    const state = Object.fromEntries(
      Object.entries(competitor).filter(([k, v]) => !RECORD.has(k) && v !== null),
    );
    fill(
      el,
      Object.keys(state).length > 0
        ? renderDocument(`${competitor.domain}: latest snapshot`, state)
        : h(
            "article",
            { class: "document" },
            h("h2", null, `${competitor.domain}`),
            h(
              "p",
              { class: "muted" },
              `Last checked ${when(competitor.lastAnalyzedAt)}. The API does not expose snapshot details for it yet; its events below show what changed.`,
            ),
          ),
    );
  }
  return { el, show };
}
