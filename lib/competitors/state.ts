import { formatPrice } from "./brief.js";
import type { CompetitorItem, PagesSeen } from "./competitors.js";
import type { ContentItem } from "./extract/content.js";
import type { JobPosting } from "./extract/jobs.js";
import type { Plan } from "./extract/pricing.js";
import type { Snapshot, Snapshots } from "./snapshot.js";

/** Open roles and posts shown at most; the counts say how many there are. */
const MAX_ROLES = 50;
const MAX_POSTS = 10;

/** What the latest snapshot says about a competitor, as the API shows it. */
export interface CompetitorSnapshot {
  /** When the site last looked different: a snapshot is kept only when something changed. */
  takenAt: string;
  homepage: string;
  headline: string | null;
  claims: string[];
  plans: Array<Plan & { priceText: string }>;
  openRoles: { count: number; source: string | null; roles: JobPosting[] };
  posts: { count: number; latest: ContentItem[] };
}

export interface CompetitorState {
  /** Where each part of the site was last read, and when. */
  pages: PagesSeen;
  /** Null until a check has read the site. */
  snapshot: CompetitorSnapshot | null;
}

/** What a snapshot shows, as the API shows it: the latest one, and each one of the history. */
export function projectionOf(snapshot: Snapshot): CompetitorSnapshot {
  const { facts } = snapshot;
  const jobs = facts.hiring?.jobs ?? [];
  const posts = facts.content?.items ?? [];
  return {
    takenAt: snapshot.takenAt,
    homepage: snapshot.homepage,
    headline: facts.messaging?.headline ?? null,
    claims: facts.messaging?.claims ?? [],
    plans: (facts.pricing?.plans ?? []).map((plan) => ({ ...plan, priceText: formatPrice(plan) })),
    openRoles: {
      count: jobs.length,
      source: facts.hiring?.source ?? null,
      roles: jobs.slice(0, MAX_ROLES),
    },
    posts: { count: posts.length, latest: posts.slice(0, MAX_POSTS) },
  };
}

/** What monitoring currently knows about a competitor: its latest snapshot and pages last seen. */
export async function stateOf(
  item: CompetitorItem,
  snapshots: Snapshots,
): Promise<CompetitorState> {
  const snapshot = item.snapshotKey ? await snapshots.load(item.snapshotKey) : undefined;
  return { pages: item.pages ?? {}, snapshot: snapshot ? projectionOf(snapshot) : null };
}
