import { type Competitor, type Competitors, toPublic } from "../competitors/competitors.js";
import {
  type CompetitorEvent,
  type Events,
  toPublic as publicEvent,
} from "../competitors/events.js";
import type { Snapshots } from "../competitors/snapshot.js";
import { type CompetitorSnapshot, stateOf } from "../competitors/state.js";
import type { CompetitorRef } from "./modules/module.js";
import type { PromptData } from "./prompts.js";

/** A tracked competitor, what its site showed at the last check, and its latest change events. */
export interface TrackedCompetitor {
  competitor: Competitor;
  /** Null until a check has read its site. */
  snapshot: CompetitorSnapshot | null;
  /** Newest first. */
  events: CompetitorEvent[];
}

/** Of each list in the snapshot, what the model is given at most. */
const SNAPSHOT_LIMITS = { claims: 5, plans: 12, roles: 15, posts: 5 };

/** What competitor monitoring knows about a competitor, for grounding. */
export class CompetitorIntel {
  constructor(
    private readonly deps: { competitors: Competitors; events: Events; snapshots: Snapshots },
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
    const [page, state] = await Promise.all([
      events.list(workspaceId, { competitorId: [item.id] }, this.recentEvents),
      stateOf(item, this.deps.snapshots),
    ]);
    return {
      competitor: toPublic(item),
      snapshot: state.snapshot,
      events: page.items.map(publicEvent),
    };
  }
}

/** The snapshot as lines of text: plans and prices, open roles, latest posts, homepage claims. */
function snapshotText(snapshot: CompetitorSnapshot): string {
  const { claims, plans, roles, posts } = SNAPSHOT_LIMITS;
  const more = (shown: number, total: number) => (total > shown ? ` (${total - shown} more)` : "");
  const lines = [`Homepage headline: ${snapshot.headline ?? "none found"}`];
  if (snapshot.claims.length > 0) {
    lines.push(`Homepage claims: ${snapshot.claims.slice(0, claims).join(" | ")}`);
  }
  lines.push(
    snapshot.plans.length === 0
      ? "Plans: none found"
      : `Plans${more(plans, snapshot.plans.length)}:\n${snapshot.plans
          .slice(0, plans)
          .map((plan) => `- ${plan.name}: ${plan.priceText}`)
          .join("\n")}`,
  );
  const open = snapshot.openRoles;
  lines.push(
    open.count === 0
      ? "Open roles: none found"
      : `Open roles: ${open.count}${more(roles, open.count)}\n${open.roles
          .slice(0, roles)
          .map((r) => `- ${[r.title, r.team, r.location].filter(Boolean).join(", ")}`)
          .join("\n")}`,
  );
  lines.push(
    snapshot.posts.count === 0
      ? "Posts: none found"
      : `Latest posts:\n${snapshot.posts.latest
          .slice(0, posts)
          .map((p) => `- ${p.date ? `${p.date}: ` : ""}${p.title}`)
          .join("\n")}`,
  );
  return lines.join("\n");
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
  const current = tracked.snapshot
    ? data.block(
        "competitor_site",
        { read: tracked.snapshot.takenAt },
        snapshotText(tracked.snapshot),
      )
    : "Not read yet: no check has run.";
  return [
    `Tracked competitor:\n${data.block("competitor", { name: c.name }, record)}`,
    `What its site showed when it last changed:\n${current}`,
    `Recent changes detected on its site, newest first:\n${changes}`,
  ].join("\n\n");
}
