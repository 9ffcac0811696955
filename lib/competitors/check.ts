import { mapLimit, withTimeout } from "../async.js";
import { logger } from "../log.js";
import { count } from "../metrics.js";
import type { SafeFetcher } from "../web/fetch.js";
import type { Renderer } from "../web/render/renderer.js";
import { HostPace } from "../web/session.js";
import { type BriefInput, type BriefWriter, steeredBrief } from "./brief.js";
import { boundChanges, untrustedPricing } from "./changes.js";
import type { CompetitorItem, Competitors, PagesSeen } from "./competitors.js";
import { diffFacts } from "./diff.js";
import { homepageCandidates } from "./domain.js";
import { type DraftPart, draftOf } from "./drafts.js";
import type { EventDraft, Events } from "./events.js";
import { type AtsApis, PUBLIC_ATS_APIS } from "./extract/ats.js";
import type { SnapshotHistory } from "./history.js";
import { observe } from "./observe.js";
import { type PageReader, pageReader } from "./page-reader.js";
import { type AlertRule, type AlertRules, matchingRules, shouldNotify } from "./rules.js";
import { type Screenshots, withShots } from "./screenshots.js";
import { CheckSession } from "./session.js";
import { bySeverity } from "./severity.js";
import { type SiteWatch, withoutPostPages } from "./site-watch.js";
import {
  type Facts,
  type Fingerprints,
  fingerprints,
  SECTIONS,
  type Section,
  type Snapshot,
  type Snapshots,
} from "./snapshot.js";
import { summarizeCheck } from "./summary.js";

export interface CheckLimits {
  /** Requests per check, robots.txt files included. */
  maxFetches: number;
  /** Time a check may spend reading the site. */
  budgetMs: number;
  /** Least time between two requests to one host. */
  politenessMs: number;
  /** Longest single request. */
  requestTimeoutMs: number;
}

/**
 * Fits `POST .../check` in API Gateway's 29 s: reading stops after 18 s, briefs take 5 s more at
 * most, and storage the rest.
 */
export const API_CHECK_LIMITS: CheckLimits = {
  maxFetches: 15,
  budgetMs: 18_000,
  politenessMs: 250,
  requestTimeoutMs: 8_000,
};

export interface CheckerDeps {
  competitors: Competitors;
  events: Events;
  snapshots: Snapshots;
  fetcher: SafeFetcher;
  limits: CheckLimits;
  /** Where the job boards' public APIs are; the vendors' own by default. */
  atsApis?: AtsApis;
  briefWriter?: BriefWriter;
  /** Where fetched pages are read; the process's sandbox within PAGE_BOUNDS by default. */
  reader?: PageReader;
  /** Renders pages that need scripts (the competitor's `render`); absent, they go unread. */
  renderer?: Renderer | undefined;
  /** Lists the site's pages that matter and reports those added and removed (site-watch.ts). */
  siteWatch?: SiteWatch;
  /** Where each new snapshot is kept for the competitor's history. */
  history?: SnapshotHistory;
  /** The workspace's alert rules, which decide which events notify. */
  rules?: AlertRules;
  /** Keeps screenshots of the pages read as the evidence of the events; absent, none are taken. */
  screenshots?: Screenshots;
  /** When the check happens (epoch ms), as its events and snapshot record it; tests move it by hand. */
  now?: () => number;
}

export interface CheckResult {
  /** False when the site could not be read; `summary` says why. */
  ok: boolean;
  /** The site answered with a wall (bot challenge, captcha, block or login page): no check was made. */
  blocked?: boolean;
  /** True when change events were recorded. */
  changed: boolean;
  summary: string;
}

/** All briefs of one check share this much time; late ones fall back to the deterministic text. */
const BRIEF_BUDGET_MS = 5_000;
/**
 * Model calls one check makes at most, for its most severe events; the others keep the
 * deterministic brief. The competitor's page decides how many events there are, never the spend.
 */
export const MAX_BRIEFS_PER_CHECK = 5;
const BRIEF_CONCURRENCY = 4;
/** A crashed check's lease runs out this long after its budget, freeing the competitor. */
const LEASE_MARGIN_MS = 60_000;

/** When each section's page was last read: those read now, now; the others as they were. */
function pagesSeen(before: PagesSeen | undefined, facts: Facts, at: string): PagesSeen {
  const seen: PagesSeen = { ...before };
  for (const section of SECTIONS) {
    const url = facts[section]?.url;
    if (url) seen[section] = { url, lastSeenAt: at };
  }
  return seen;
}

const sameFingerprints = (a: Fingerprints, b: Fingerprints) =>
  SECTIONS.every((section) => a[section] === b[section]);

/**
 * Sections the site did not yield this time keep their last known state, and so does pricing
 * read with too little confidence to trust (`untrustedPricing`).
 */
function carryOver(fresh: Facts, previous: Snapshot | undefined) {
  const facts: Facts = { ...fresh };
  const carried: Section[] = [];
  const distrusted = previous ? untrustedPricing(previous.facts, fresh) : false;
  for (const section of SECTIONS) {
    const before = previous?.facts[section];
    if ((!facts[section] || (section === "pricing" && distrusted)) && before) {
      Object.assign(facts, { [section]: before });
      carried.push(section);
    }
  }
  return { facts, carried, distrusted };
}

/**
 * Checks a competitor's site for changes: reads it within a budget, compares what it found with the
 * last snapshot section by section, records one event per real change, and keeps the new snapshot.
 */
export class Checker {
  /** Checks running at once take turns at a host they share (a job board's API, a domain). */
  private readonly pace = new HostPace();

  constructor(private readonly deps: CheckerDeps) {}

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /**
   * The longest a check holds its competitor: its budget, then briefs and storage within the
   * margin. Past it the competitor's lease ends, so a crashed check never holds it longer.
   */
  boundMs(): number {
    return this.deps.limits.budgetMs + LEASE_MARGIN_MS;
  }

  /** `not_found` for an unknown competitor, `conflict` while another check of it runs. */
  /** `reserve` runs once the check holds the competitor, before any request (a quota). */
  async check(
    workspaceId: string,
    competitorId: string,
    reserve: () => Promise<unknown> = async () => undefined,
  ): Promise<CheckResult> {
    const { competitors, limits } = this.deps;
    // Deadlines and leases run on the real clock; `now` dates what the check records.
    const started = Date.now();
    const until = started + this.boundMs();
    const item = await competitors.lease(workspaceId, competitorId, started, until);
    try {
      await reserve();
      const result = await this.run(item, started + limits.budgetMs);
      count(result.ok ? "CompetitorChecks" : "CompetitorChecksFailed");
      return result;
    } catch (err) {
      // Frees the competitor without marking it checked, so a retry runs in full.
      await competitors.release(item).catch(() => undefined);
      throw err;
    }
  }

  private async run(item: CompetitorItem, deadline: number): Promise<CheckResult> {
    const { competitors, snapshots, limits } = this.deps;
    const session = new CheckSession(this.deps.fetcher, {
      ...limits,
      deadline,
      pace: this.pace,
      render: item.render,
      renderer: this.deps.renderer,
      screenshots: this.deps.screenshots !== undefined,
    });
    const visit = { session, read: this.deps.reader ?? pageReader() };
    const observation = await observe(
      visit,
      homepageCandidates(item),
      this.deps.atsApis ?? PUBLIC_ATS_APIS,
    );
    const checkedAt = new Date(this.now()).toISOString();
    if (!observation.ok) {
      await competitors.release(item, { lastCheckedAt: checkedAt });
      const summary = `${item.domain} could not be checked: ${observation.reason}`;
      const blocked = observation.blocked ? { blocked: true } : {};
      return { ok: false, changed: false, summary, ...blocked };
    }
    const done = {
      lastCheckedAt: checkedAt,
      lastAnalyzedAt: checkedAt,
      companyName: observation.name ?? item.companyName ?? null,
      pages: pagesSeen(item.pages, observation.facts, checkedAt),
    };
    // After the sections, within what is left of the same budget.
    const siteChanges =
      (await this.deps.siteWatch?.changes(visit, item, observation.homepage, checkedAt)) ?? [];
    if (
      item.snapshotKey &&
      siteChanges.length === 0 &&
      sameFingerprints(fingerprints(observation.facts), item.fingerprints)
    ) {
      await competitors.release(item, done);
      const summary = summarizeCheck({ domain: item.domain, baseline: false, changes: [] });
      return { ok: true, changed: false, summary };
    }
    const previous = item.snapshotKey ? await snapshots.load(item.snapshotKey) : undefined;
    const { facts, carried, distrusted } = carryOver(observation.facts, previous);
    const shots = await this.deps.screenshots?.capture(
      item,
      session,
      observation.facts,
      previous,
      deadline,
    );
    const changes = withoutPostPages([
      ...(previous ? diffFacts(previous.facts, facts) : []),
      ...siteChanges,
    ]);
    const context = {
      item,
      name: done.companyName ?? item.domain,
      before: previous?.facts ?? {},
      after: observation.facts,
    };
    // Events go first: should the check die before the snapshot is kept, the retry reports the
    // change again rather than never.
    const drafts = await this.drafts(
      item,
      boundChanges(changes).map((part) => draftOf(part, context)),
    );
    const events = await this.deps.events.record(
      item.workspaceId,
      withShots(drafts, previous?.screenshots, shots),
      checkedAt,
    );
    const prints = fingerprints(facts);
    if (previous && sameFingerprints(prints, item.fingerprints)) {
      await competitors.release(item, done);
    } else {
      const snapshot: Snapshot = {
        takenAt: checkedAt,
        homepage: observation.homepage,
        facts,
        carried,
        ...(shots ? { screenshots: shots } : {}),
      };
      const key = await snapshots.save(item.workspaceId, item.id, snapshot);
      await this.deps.history?.add(item.workspaceId, item.id, snapshot);
      const kept = await competitors.release(item, {
        ...done,
        snapshotKey: key,
        fingerprints: prints,
      });
      if (!kept) await snapshots.remove(key);
      // The history keeps what each snapshot showed; the bucket needs only the latest to compare.
      else if (item.snapshotKey && item.snapshotKey !== key)
        await snapshots.remove(item.snapshotKey);
    }
    const summary = summarizeCheck({
      domain: item.domain,
      baseline: !previous,
      changes,
      facts,
      carried,
      firstSeen: previous ? SECTIONS.filter((s) => facts[s] && !previous.facts[s]) : [],
      distrustedPricing: distrusted,
    });
    return { ok: true, changed: events.length > 0, summary };
  }

  /**
   * The events' drafts: which notify by the workspace's rules, and briefs by the model for the
   * most severe few (`MAX_BRIEFS_PER_CHECK`), the rest keeping the deterministic brief.
   */
  private async drafts(item: CompetitorItem, parts: DraftPart[]): Promise<EventDraft[]> {
    const rules: AlertRule[] =
      parts.length > 0 ? ((await this.deps.rules?.list(item.workspaceId)) ?? []) : [];
    const ranked = [...parts]
      .sort((a, b) => bySeverity(a.draft.severity, b.draft.severity))
      .map((part, i) => ({ ...part, briefed: i < MAX_BRIEFS_PER_CHECK }));
    const briefsEnd = Date.now() + BRIEF_BUDGET_MS;
    return mapLimit(ranked, BRIEF_CONCURRENCY, async ({ draft, input, briefed }) => ({
      ...draft,
      alert: shouldNotify(rules, draft),
      alertRules: matchingRules(rules, draft),
      aiBrief: input && briefed ? await this.brief(input, briefsEnd - Date.now()) : draft.aiBrief,
    }));
  }

  private async brief(input: BriefInput, timeoutMs: number): Promise<string> {
    const writer = this.deps.briefWriter;
    if (!writer || timeoutMs <= 0) return input.summary;
    try {
      const signal = AbortSignal.timeout(timeoutMs);
      const text = (await withTimeout(writer(input, { signal }), timeoutMs)).trim();
      if (steeredBrief(text, input.severity)) {
        logger.warn(
          "brief restated page instructions or another severity; using the deterministic brief",
        );
        return input.summary;
      }
      return text || input.summary;
    } catch (err) {
      logger.warn("brief writer failed; using the deterministic brief", { error: err });
      return input.summary;
    }
  }
}
