import { type Competitor, type Competitors, toPublic } from "../competitors/competitors.js";
import {
  type CompetitorEvent,
  type Events,
  toPublic as publicEvent,
} from "../competitors/events.js";
import type { CompetitorRef } from "./modules/module.js";
import type { PromptData } from "./prompts.js";

/** A tracked competitor and its latest change events, newest first. */
export interface TrackedCompetitor {
  competitor: Competitor;
  events: CompetitorEvent[];
}

/** What competitor monitoring knows about a competitor, for grounding. */
export class CompetitorIntel {
  constructor(
    private readonly deps: { competitors: Competitors; events: Events },
    /** Change events given to the model at most. */
    private readonly recentEvents = 10,
  ) {}

  /**
   * The tracked competitor a request names: by id (an unknown id is a 404, as everywhere), else
   * by its normalised domain (undefined when the domain is not tracked; a 400 when invalid).
   */
  async find(workspaceId: string, ref: CompetitorRef): Promise<TrackedCompetitor | undefined> {
    const { competitors, events } = this.deps;
    const item = ref.competitorId
      ? await competitors.get(workspaceId, ref.competitorId)
      : ref.domain
        ? await competitors.findByDomain(workspaceId, ref.domain)
        : undefined;
    if (!item) return undefined;
    const page = await events.list(workspaceId, { competitorId: item.id }, this.recentEvents);
    return { competitor: toPublic(item), events: page.items.map(publicEvent) };
  }
}

/** The tracked record and its changes as data blocks: page-derived text is never instructions. */
export function competitorSection(data: PromptData, tracked: TrackedCompetitor | undefined) {
  if (!tracked) {
    return "Tracked competitor data: none (this competitor is not tracked, so no change history is known).";
  }
  const { competitor: c, events } = tracked;
  const record = [
    `Domain: ${c.domain}`,
    `Name on its site: ${c.companyName ?? "not found yet"}`,
    `Homepage: ${c.homepage ?? `https://${c.domain}/`}`,
    `Tracked since: ${c.createdAt}`,
    `Site last analysed: ${c.lastAnalyzedAt ?? "never"}`,
  ].join("\n");
  const changes =
    events.length === 0
      ? "No changes recorded yet."
      : events
          .map((e) =>
            data.block(
              "competitor_change",
              { type: e.type, severity: e.severity, detected: e.detectedAt },
              `${e.title}\n${e.aiBrief.slice(0, 600)}`,
            ),
          )
          .join("\n\n");
  return [
    `Tracked competitor:\n${data.block("competitor", { name: c.name }, record)}`,
    `Recent changes detected on its site, newest first:\n${changes}`,
  ].join("\n\n");
}
