import { withTimeout } from "../../async.js";
import { type Competitors, toPublic as publicCompetitor } from "../../competitors/competitors.js";
import { normalizeDomain } from "../../competitors/domain.js";
import { type Events, toPublic as publicEvent } from "../../competitors/events.js";
import type { Snapshots } from "../../competitors/snapshot.js";
import { stateOf } from "../../competitors/state.js";
import type { Retriever } from "../../knowledge/retrieval/retrieval.js";
import { logger } from "../../log.js";
import type { ArtifactSummary, Artifacts } from "../artifacts/artifacts.js";
import type { BrandProfiles } from "../brand/profiles.js";
import { brandWords } from "../modules/competitor.js";
import { queryOf } from "../modules/module.js";
import { type BattlecardInput, battlecard } from "./battlecard.js";
import { BATTLECARD_LIMITS } from "./contract.js";

export interface BattlecardsDeps {
  competitors: Competitors;
  events: Events;
  snapshots: Snapshots;
  /** The workspace's own plans and differentiators, set beside the competitor's. */
  brands: BrandProfiles;
  /** Saved competitor analyses (the competitor module's artifacts). */
  artifacts: Artifacts;
  /** The knowledge base, as chat and the intel modules search it: enabled sources only. */
  retriever: Retriever;
}

/** Lowercase, for comparing what a person typed with what a check found. */
const folded = (text: string | null | undefined) => text?.trim().toLowerCase() || undefined;

/** The domain a competitor analysis was asked about, when it names a valid one. */
function domainOf(input: string | undefined): string | undefined {
  if (!input) return undefined;
  try {
    return normalizeDomain(input).domain;
  } catch {
    return undefined;
  }
}

/**
 * A competitor's battlecard, written from what the workspace knows of it: the tracked record and
 * its latest snapshot and changes, the brand profile, the latest saved competitor analysis of it,
 * and what the knowledge base's enabled sources say about it. No model is called, so a card needs
 * no key and costs no quota; every read is bounded (`BATTLECARD_LIMITS`).
 */
export class Battlecards {
  constructor(
    private readonly deps: BattlecardsDeps,
    private readonly limits = BATTLECARD_LIMITS,
  ) {}

  /** The card as Markdown, and the title its file is named after. */
  async write(workspaceId: string, id: string): Promise<{ title: string; markdown: string }> {
    const { competitors, events, snapshots, brands } = this.deps;
    // The key names the caller's workspace: another workspace's competitor is not found.
    const item = await competitors.get(workspaceId, id);
    const competitor = publicCompetitor(item);
    const [state, recent, brand, analysis, knowledge] = await Promise.all([
      stateOf(item, snapshots),
      events.list(workspaceId, { competitorId: [item.id] }, this.limits.events),
      brands.get(workspaceId),
      this.analysisOf(workspaceId, competitor),
      this.passagesAbout(workspaceId, competitor),
    ]);
    const name = competitor.companyName ?? competitor.domain;
    return {
      title: `battlecard ${name}`,
      markdown: battlecard({
        competitor: { ...competitor, ...state },
        events: recent.items.map(publicEvent),
        brand,
        analysis,
        ...knowledge,
      }),
    };
  }

  /**
   * The newest saved competitor analysis asked about this competitor: by its id, its domain (as
   * a domain or URL) or its company name, as the module's input named it.
   */
  private async analysisOf(
    workspaceId: string,
    competitor: { id: string; domain: string; companyName: string | null },
  ): Promise<BattlecardInput["analysis"]> {
    const { artifacts } = this.deps;
    const page = await artifacts.list(workspaceId, ["competitor"], this.limits.analyses);
    const name = folded(competitor.companyName);
    const about = ({ inputs }: ArtifactSummary) => {
      const asked = inputs as { competitorId?: string; domain?: string; company?: string };
      return (
        asked.competitorId === competitor.id ||
        domainOf(asked.domain) === competitor.domain ||
        (name !== undefined && folded(asked.company) === name)
      );
    };
    const summary = page.items.find(about);
    if (!summary) return undefined;
    const artifact = await artifacts.get(workspaceId, summary.id);
    return artifact.module === "competitor"
      ? { title: artifact.title, createdAt: artifact.createdAt, output: artifact.output }
      : undefined;
  }

  /**
   * Passages of the knowledge base that name the competitor (its company name or its domain),
   * searched for by those words as the competitor module searches: only enabled, indexed sources
   * answer. A search that fails or outlasts `searchMs` leaves the card without them.
   */
  private async passagesAbout(
    workspaceId: string,
    competitor: { domain: string; companyName: string | null },
  ): Promise<Pick<BattlecardInput, "passages" | "searched">> {
    // `rival-labs.com` is named "rival labs" as often as by its domain; a label that is a
    // number (an address) names nothing.
    const label = competitor.domain.split(".")[0]?.replaceAll("-", " ");
    const names = [folded(competitor.companyName), competitor.domain, label].filter(
      (n): n is string => n !== undefined && /[a-z]{2}/.test(n),
    );
    const query = queryOf(brandWords(competitor.domain), competitor.companyName ?? undefined);
    try {
      const results = await withTimeout(
        // A few more than shown: a semantic match that never names them is left out.
        this.deps.retriever.search(workspaceId, query, this.limits.passages * 2),
        this.limits.searchMs,
      );
      const passages = results
        .filter((r) => names.some((n) => r.text.toLowerCase().includes(n)))
        .slice(0, this.limits.passages)
        .map((r) => ({
          text: r.text,
          source: r.name,
          // A web page's address; a file's name or a text's absence is no link.
          url: /^https?:\/\//.test(r.source_url_or_path ?? "") ? r.source_url_or_path : null,
        }));
      return { passages, searched: true };
    } catch (error) {
      logger.warn("battlecard without the knowledge base", { workspaceId, error });
      return { passages: [], searched: false };
    }
  }
}
