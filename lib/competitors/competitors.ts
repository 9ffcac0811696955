import { conflict, notFound } from "../errors.js";
import { isId, newId } from "../ids.js";
import { Caps } from "../limits/caps.js";
import { type Condition, equals, lessThan } from "../store/conditions.js";
import { type Item, type Page, type Table, wsKey } from "../store/table.js";
import type { RenderMode } from "../web/render/renderer.js";
import { type Cadence, DEFAULT_CADENCE } from "./cadence.js";
import { normalizeDomain } from "./domain.js";
import type { Section } from "./sections.js";
import { type Fingerprints, historyPrefix, type Snapshots } from "./snapshot.js";

/** A tracked competitor as the API shows it. */
export interface Competitor {
  id: string;
  domain: string;
  /** The domain, as the interface document fixes it. */
  name: string;
  /** The company's name as its site states it (JSON-LD, site name, title, copyright); null until a check finds it. */
  companyName: string | null;
  /** Where checks start when a URL was given; null means `https://{domain}/` (or http). */
  homepage: string | null;
  createdAt: string;
  /** When a check last read the site successfully. */
  lastAnalyzedAt: string | null;
  /** How often the sweep checks it. */
  cadence: Cadence;
  /** When its pages are rendered in a browser before they are read. */
  render: RenderMode;
}

/** Where each section of a competitor's site was last read, and when. */
export type PagesSeen = Partial<Record<Section, { url: string; lastSeenAt: string }>>;

export interface CompetitorItem
  extends Item,
    Omit<Competitor, "companyName" | "cadence" | "render"> {
  /** Absent: `auto` (and on competitors tracked before rendering existed). */
  render?: RenderMode;
  /** Absent on competitors no check has named yet. */
  companyName?: string | null;
  /** Absent on competitors tracked before cadences existed: daily. */
  cadence?: Cadence;
  /** Absent on competitors no check has read yet. */
  pages?: PagesSeen;
  workspaceId: string;
  /** When the last check ended, whatever its outcome: queued checks older than this are skipped. */
  lastCheckedAt: string | null;
  /** Epoch milliseconds until which a running check owns the competitor; 0 when none runs. */
  checkLeaseUntil: number;
  /** The latest snapshot in the bucket, and its per-section fingerprints. */
  snapshotKey: string | null;
  fingerprints: Fingerprints;
}

/** Claims a normalised domain in a workspace: dynalite has no transactions, a conditional put does. */
interface DomainClaim extends Item {
  competitorId: string;
  claimedAt: string;
}

/**
 * One per competitor in a shared partition, so the nightly sweep can page through every
 * workspace's competitors without scanning the table.
 */
export interface CompetitorIndexItem extends Item {
  workspaceId: string;
  competitorId: string;
  /** A copy of the competitor's, so the sweep tells which are due from the index alone. */
  cadence?: Cadence;
}

export const COMPETITOR_PREFIX = "COMP#";
const DOMAIN_PREFIX = "COMPDOMAIN#";
export const COMPETITOR_INDEX = "COMPETITORS";
export const competitorKey = (id: string) => `${COMPETITOR_PREFIX}${id}`;
const domainKey = (domain: string) => `${DOMAIN_PREFIX}${domain}`;
const indexKey = (workspaceId: string, id: string) => `${workspaceId}#${id}`;

/** A claim whose competitor never got written (a create that died halfway) is freed after this. */
const STALE_CLAIM_MS = 60_000;

/** The domain claim is still the given competitor's: what taking over a stale claim requires. */
const claimedBy = (competitorId: string): Condition => equals("competitorId", competitorId);

/** No check holds the competitor: its lease (epoch ms) ended before `now`. */
const leaseOver = (now: number): Condition => lessThan("checkLeaseUntil", now);

/** The lease is still the one a check took (`until`): no other check took over since. */
const leaseHeld = (until: number): Condition => equals("checkLeaseUntil", until);

export function toPublic(item: CompetitorItem): Competitor {
  return {
    id: item.id,
    domain: item.domain,
    name: item.name,
    companyName: item.companyName ?? null,
    homepage: item.homepage,
    createdAt: item.createdAt,
    lastAnalyzedAt: item.lastAnalyzedAt,
    cadence: item.cadence ?? DEFAULT_CADENCE,
    render: item.render ?? "auto",
  };
}

/** One page of every workspace's competitors, from the sweep index. */
export function competitorIndexPage(
  table: Table,
  limit: number,
  cursor?: string,
): Promise<Page<CompetitorIndexItem>> {
  return table.page<CompetitorIndexItem>({ pk: COMPETITOR_INDEX, skPrefix: "", limit, cursor });
}

/** Tracked competitors: one record per competitor, its domain claim, and its sweep index entry. */
export class Competitors {
  constructor(
    private readonly deps: {
      table: Table;
      /** Needed to delete competitors only; readers (intel grounding) go without its parsers. */
      snapshots?: Snapshots;
      /** The workspace's cap on competitors (the default limits when not given). */
      caps?: Caps | undefined;
    },
  ) {
    this.caps = deps.caps ?? new Caps(deps.table);
  }

  private readonly caps: Caps;

  async find(workspaceId: string, id: string): Promise<CompetitorItem | undefined> {
    if (!isId("competitor", id)) return undefined;
    return this.deps.table.get<CompetitorItem>(wsKey(workspaceId), competitorKey(id));
  }

  async get(workspaceId: string, id: string): Promise<CompetitorItem> {
    const item = await this.find(workspaceId, id);
    if (!item) throw notFound("competitor", id);
    return item;
  }

  /** The competitor tracking a domain (given as a domain or URL), found through its domain claim. */
  async findByDomain(workspaceId: string, input: string): Promise<CompetitorItem | undefined> {
    const { domain } = normalizeDomain(input);
    const claim = await this.deps.table.get<DomainClaim>(wsKey(workspaceId), domainKey(domain));
    return claim ? this.find(workspaceId, claim.competitorId) : undefined;
  }

  /**
   * Starts tracking a domain (or URL), in a slot of the workspace's competitors cap
   * (`limit_reached` when it holds its cap); a conflict when it tracks the domain already.
   */
  async create(
    workspaceId: string,
    input: string,
    cadence: Cadence = DEFAULT_CADENCE,
    render?: RenderMode,
  ): Promise<CompetitorItem> {
    const { domain, homepage } = normalizeDomain(input);
    const id = newId("competitor");
    const createdAt = new Date().toISOString();
    await this.caps.take(workspaceId, "competitors");
    try {
      await this.claim(workspaceId, domain, id, createdAt);
    } catch (err) {
      await this.caps.release(workspaceId, "competitors");
      throw err;
    }
    const item: CompetitorItem = {
      pk: wsKey(workspaceId),
      sk: competitorKey(id),
      workspaceId,
      id,
      domain,
      name: domain,
      homepage,
      createdAt,
      lastAnalyzedAt: null,
      cadence,
      ...(render ? { render } : {}),
      lastCheckedAt: null,
      checkLeaseUntil: 0,
      snapshotKey: null,
      fingerprints: {},
    };
    // The index entry goes first: one left behind by a failed create only queues a check that
    // finds no competitor, while a competitor missing from the index would never be swept.
    await this.deps.table.put({
      pk: COMPETITOR_INDEX,
      sk: indexKey(workspaceId, id),
      workspaceId,
      competitorId: id,
      cadence,
    } satisfies CompetitorIndexItem);
    await this.deps.table.put(item);
    return item;
  }

  private async claim(workspaceId: string, domain: string, id: string, now: string): Promise<void> {
    const { table } = this.deps;
    const key = { pk: wsKey(workspaceId), sk: domainKey(domain) };
    if (await table.create({ ...key, competitorId: id, claimedAt: now } satisfies DomainClaim))
      return;
    const claim = await table.get<DomainClaim>(key.pk, key.sk);
    if (!claim) return this.claim(workspaceId, domain, id, now);
    const owner = await this.find(workspaceId, claim.competitorId);
    if (!owner && Date.parse(claim.claimedAt) < Date.now() - STALE_CLAIM_MS) {
      const taken = await table.update(
        key.pk,
        key.sk,
        { competitorId: id, claimedAt: now },
        claimedBy(claim.competitorId),
      );
      if (taken) return;
    }
    throw conflict(`${domain} is tracked already`, { domain, competitorId: claim.competitorId });
  }

  list(workspaceId: string, limit: number, cursor?: string): Promise<Page<CompetitorItem>> {
    return this.deps.table.page<CompetitorItem>({
      pk: wsKey(workspaceId),
      skPrefix: COMPETITOR_PREFIX,
      limit,
      cursor,
      newestFirst: true,
    });
  }

  /** Every competitor id of a workspace. */
  async ids(workspaceId: string): Promise<string[]> {
    const items = await this.deps.table.all<CompetitorItem>(wsKey(workspaceId), COMPETITOR_PREFIX, [
      "id",
    ]);
    return items.map((item) => item.id);
  }

  /**
   * Sets how often the sweep checks the competitor: on its record, then on its sweep index entry
   * (what the sweep reads). Should the second write fail, asking again repairs it.
   */
  async setCadence(workspaceId: string, id: string, cadence: Cadence): Promise<CompetitorItem> {
    const item =
      isId("competitor", id) &&
      (await this.deps.table.update<CompetitorItem>(wsKey(workspaceId), competitorKey(id), {
        cadence,
      }));
    if (!item) throw notFound("competitor", id);
    await this.deps.table.update(COMPETITOR_INDEX, indexKey(workspaceId, id), { cadence });
    return item;
  }

  /**
   * Removes the record first (a check finishing late then finds nothing to update), then the
   * domain claim, the index entry and the snapshots. Events stay: they are history.
   */
  async delete(workspaceId: string, id: string): Promise<void> {
    const item = await this.get(workspaceId, id);
    const { table } = this.deps;
    if (!(await table.delete(item.pk, item.sk))) throw notFound("competitor", id);
    await this.caps.release(workspaceId, "competitors");
    const claim = await table.get<DomainClaim>(item.pk, domainKey(item.domain));
    if (claim?.competitorId === id) await table.delete(item.pk, domainKey(item.domain));
    await table.delete(COMPETITOR_INDEX, indexKey(workspaceId, id));
    if (!this.deps.snapshots) throw new Error("Deleting a competitor needs the snapshot store");
    await this.deps.snapshots.removeAll(workspaceId, id);
    await table.deleteAll(item.pk, historyPrefix(id));
  }

  /**
   * Takes the competitor for one check until `until` (epoch ms); a conflict while another check holds
   * it, so two checks never compare against the same snapshot and report a change twice.
   */
  async lease(
    workspaceId: string,
    id: string,
    now: number,
    until: number,
  ): Promise<CompetitorItem> {
    const item =
      isId("competitor", id) &&
      (await this.deps.table.update<CompetitorItem>(
        wsKey(workspaceId),
        competitorKey(id),
        { checkLeaseUntil: until },
        leaseOver(now),
      ));
    if (item) return item;
    await this.get(workspaceId, id);
    throw conflict("A check of this competitor is running; try again shortly");
  }

  /**
   * Records a check's outcome and frees the lease, if the lease is still ours. Answers undefined
   * when the competitor was deleted meanwhile or another check took over.
   */
  release(
    item: CompetitorItem,
    fields: Partial<
      Pick<
        CompetitorItem,
        | "lastCheckedAt"
        | "lastAnalyzedAt"
        | "snapshotKey"
        | "fingerprints"
        | "companyName"
        | "pages"
      >
    > = {},
  ): Promise<CompetitorItem | undefined> {
    return this.deps.table.update<CompetitorItem>(
      item.pk,
      item.sk,
      { ...fields, checkLeaseUntil: 0 },
      leaseHeld(item.checkLeaseUntil),
    );
  }
}
